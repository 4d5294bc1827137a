package dev.leases.spring;

import dev.leases.HolderId;
import dev.leases.once.RunLedger;
import dev.leases.once.RunRecord;
import dev.leases.postgres.JdbcRunLedger;
import java.sql.Connection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import javax.sql.DataSource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A {@link JdbcRunLedger} whose completion step runs as a Spring transaction, so that the work's
 * writes through Spring (JdbcTemplate, JdbcClient, JPA, a {@code @Transactional} method) commit or
 * roll back together with the fence check and the completion record.
 *
 * <ul>
 *   <li>{@link #complete}: when no transaction is active, opens one (REQUIRED, READ COMMITTED) with
 *       the transaction manager, runs the work in it, then checks the fence and records the
 *       completion on the transaction's own connection, and commits before returning — the same
 *       order as {@code JdbcRunLedger}'s own transaction. When the caller's transaction is
 *       active, joins it instead: the completion then commits when the caller's transaction does
 *       (after {@code ExactlyOnce} has released the lease — still safe, since the completion
 *       holds the job's fence row until then and a successor waits for it, up to the ledger's call
 *       timeout; keep such a transaction short after the run, because the ledger also sets
 *       {@code idle_in_transaction_session_timeout} to its call timeout for the rest of it).
 *   <li>{@link #begin}, {@link #fail}, {@link #completion}, {@link #history} run in their own
 *       short transactions on the DataSource, never in the caller's: a begin must commit at once
 *       (it raises the fence against older runners), and a failure record must survive the
 *       rollback of the work.
 * </ul>
 *
 * <p>The transaction manager must bind {@code dataSource}'s connection (DataSourceTransactionManager
 * or JpaTransactionManager on the same DataSource); otherwise {@link #complete} throws
 * {@link IllegalStateException} naming the DataSource. A transaction at another isolation level
 * than READ COMMITTED is refused with a message saying so.
 */
public final class SpringRunLedger implements RunLedger<Connection> {

  private final JdbcRunLedger own;
  private final JdbcRunLedger joined;
  private final TransactionTemplate transactions;

  /**
   * @param settings applies the table names and call timeout to both underlying ledgers
   */
  public SpringRunLedger(DataSource dataSource, PlatformTransactionManager transactionManager,
      UnaryOperator<JdbcRunLedger.Builder> settings) {
    Objects.requireNonNull(dataSource, "dataSource must not be null");
    Objects.requireNonNull(transactionManager, "transactionManager must not be null");
    this.own = settings.apply(JdbcRunLedger.builder(dataSource)).build();
    // tables are created by `own` (begin always runs first), never inside the caller's transaction
    this.joined = settings.apply(JdbcRunLedger.builder(
        SpringTransactions.boundTo(dataSource, "SpringRunLedger"))).createTable(false).build();
    this.transactions = new TransactionTemplate(transactionManager);
    transactions.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRED);
    transactions.setIsolationLevel(TransactionDefinition.ISOLATION_READ_COMMITTED);
  }

  @Override
  public Optional<RunRecord> completion(String job, String run) {
    return own.completion(job, run);
  }

  @Override
  public RunRecord begin(String job, String run, long token, HolderId holder) {
    return own.begin(job, run, token, holder);
  }

  @Override
  public RunRecord complete(RunRecord attempt, Consumer<Connection> work) {
    if (SpringTransactions.active()) {
      return joined.complete(attempt, work);
    }
    return transactions.execute(status -> joined.complete(attempt, work));
  }

  @Override
  public RunRecord fail(RunRecord attempt, String failure) {
    return own.fail(attempt, failure);
  }

  @Override
  public List<RunRecord> history(String job, int limit) {
    return own.history(job, limit);
  }

  @Override
  public String toString() {
    return "SpringRunLedger[" + own + "]";
  }
}
