package dev.leases.spring;

import dev.leases.postgres.JdbcFence;
import dev.leases.postgres.JdbcWork;
import java.sql.Connection;
import java.util.Objects;
import java.util.OptionalLong;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.datasource.DataSourceUtils;

/**
 * {@link JdbcFence} for Spring applications: a write joins the Spring-managed transaction of the
 * fence's DataSource when one is active, so the fence check and everything else the transaction
 * writes (JdbcTemplate, JdbcClient, JPA flushes) commit or roll back together.
 *
 * <pre>{@code
 * @Transactional
 * public void ship(long orderId) {
 *   fence.check("shipping", LeaseContext.currentToken()); // locks the fence row until commit
 *   jdbc.update("UPDATE orders SET shipped = true WHERE id = ?", orderId);
 *   orders.findById(orderId).orElseThrow().setShippedBy(node); // JPA: flushed in this transaction
 * }
 * }</pre>
 *
 * <p>In a transaction, {@link dev.leases.FencedOutException} (a higher token has written) marks
 * it rollback-only and propagates, so nothing the transaction wrote commits, even if a caller
 * catches the exception. The fence row stays locked from the check to the end of the transaction:
 * writers of the same resource are serialised, so keep these transactions short. Outside a
 * transaction, {@link #write} runs in a transaction of its own (as {@code JdbcFence.write}) and
 * {@link #check} is refused (it would protect nothing).
 */
public final class SpringJdbcFence {

  private final JdbcFence fence;
  private final DataSource dataSource;
  private final FenceWriteRecorder recorder;

  /** Writes through {@code fence} on connections of {@code dataSource}, recording each outcome. */
  public SpringJdbcFence(JdbcFence fence, DataSource dataSource,
      @Nullable FenceWriteRecorder recorder) {
    this.fence = Objects.requireNonNull(fence, "fence must not be null");
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource must not be null");
    this.recorder = recorder != null ? recorder : FenceWriteRecorder.NONE;
  }

  /**
   * Checks and advances the fence of {@code resource} to {@code token}, then runs {@code work} on
   * the connection: the active transaction's, else a new transaction's that commits both.
   *
   * @throws dev.leases.FencedOutException if a higher token has written; the work did not run
   * @throws IllegalStateException if a transaction is active that does not manage the DataSource
   */
  public <T> T write(String resource, long token, JdbcWork<T> work) {
    return recorder.record(resource, () -> {
      if (SpringTransactions.holder(dataSource) != null) {
        Connection c = DataSourceUtils.getConnection(dataSource);
        try {
          return fence.write(c, resource, token, work);
        } catch (RuntimeException | Error e) {
          SpringTransactions.rollbackOnly(dataSource);
          throw e;
        } finally {
          DataSourceUtils.releaseConnection(c, dataSource);
        }
      }
      if (SpringTransactions.active()) {
        throw SpringTransactions.notManaged(dataSource, "SpringJdbcFence");
      }
      return fence.write(resource, token, work);
    });
  }

  /**
   * Checks and advances the fence in the active transaction, before the transaction's other
   * writes: they commit only if no higher token wrote first.
   *
   * @throws IllegalStateException outside a transaction of the fence's DataSource
   */
  public void check(String resource, long token) {
    if (SpringTransactions.holder(dataSource) == null) {
      throw new IllegalStateException("SpringJdbcFence.check needs an active Spring transaction"
          + " on " + dataSource + " (annotate the method @Transactional), so that the check and"
          + " the writes commit together; use write(resource, token, work) otherwise");
    }
    write(resource, token, c -> null);
  }

  /** The highest token that has written to {@code resource}, empty if none has. */
  public OptionalLong highestToken(String resource) {
    return fence.highestToken(resource);
  }

  /** The underlying fence, for writes on a connection you manage yourself. */
  public JdbcFence unwrap() {
    return fence;
  }
}
