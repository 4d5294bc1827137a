package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.HolderId;
import dev.leases.LeaseStore;
import dev.leases.once.RunLedger;
import dev.leases.once.RunLedgerFactory;
import dev.leases.once.RunContext;
import dev.leases.once.RunRecord;
import dev.leases.tck.once.LedgerRecipe;
import dev.leases.tck.once.OnceEffect;
import dev.leases.tck.once.RunLedgerTck;
import dev.leases.tck.process.StoreRecipe;
import java.sql.Connection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The run-ledger kit on {@link JdbcRunLedger} and the PostgreSQL lease store, with the
 * transactional effect on top: every run inserts a business row in the work's transaction, and
 * after each completed (job, run) exactly the completing attempt's row exists — none from runners
 * killed mid-run, frozen and fenced out, or losing a race.
 */
class JdbcRunLedgerKitTest extends RunLedgerTck {

  private static HikariDataSource effects;

  @BeforeAll
  static void createEffectTable() throws Exception {
    effects = PostgresServers.pool(2);
    JdbcRunLedgerTest.createEffects(effects);
    JdbcRunLedger.builder(effects).build().history("warm-up", 1); // tables before children race
  }

  @AfterAll
  static void closeEffects() {
    effects.close();
  }

  /** Inserts (job, run, token, holder) into the effect table on the run's connection. */
  public static final class EffectRow implements OnceEffect {
    @Override
    public void apply(Object resource, RunContext ctx) throws Exception {
      JdbcRunLedgerTest.insertEffect((Connection) resource, ctx.job(), ctx.run(), ctx.token(),
          ctx.holder().value());
    }
  }

  @Override
  protected Optional<Class<? extends OnceEffect>> effect() {
    return Optional.of(EffectRow.class);
  }

  @Override
  protected void checkEffects(String job, String run, long token) throws Exception {
    assertThat(JdbcRunLedgerTest.effectTokens(effects, job, run))
        .as("business rows of (%s, %s): only the completed attempt's commit", job, run)
        .containsExactly(token);
    assertThat(JdbcRunLedgerTest.completedRows(effects, JdbcRunLedger.DEFAULT_TABLE, job, run))
        .isOne();
  }

  /** Opens a {@link JdbcRunLedger} on its own small pool; closing it closes the pool. */
  public static final class Factory implements RunLedgerFactory {
    @Override
    public RunLedger<Connection> open(Map<String, String> settings) {
      HikariDataSource pool = PostgresServers.pool(settings.get("url"), 2, c -> {});
      return new Owning(JdbcRunLedger.builder(pool).build(), pool);
    }
  }

  private record Owning(JdbcRunLedger ledger, HikariDataSource pool)
      implements RunLedger<Connection>, AutoCloseable {
    @Override
    public Optional<RunRecord> completion(String job, String run) {
      return ledger.completion(job, run);
    }

    @Override
    public RunRecord begin(String job, String run, long token, HolderId holder) {
      return ledger.begin(job, run, token, holder);
    }

    @Override
    public RunRecord complete(RunRecord attempt, Consumer<Connection> work) {
      return ledger.complete(attempt, work);
    }

    @Override
    public RunRecord fail(RunRecord attempt, String failure) {
      return ledger.fail(attempt, failure);
    }

    @Override
    public List<RunRecord> history(String job, int limit) {
      return ledger.history(job, limit);
    }

    @Override
    public void close() {
      pool.close();
    }
  }

  private static Map<String, String> storeSettings() {
    return Map.of(PostgresLeaseStoreFactory.JDBC_URL, PostgresServers.url());
  }

  @Override
  protected LeaseStore newStore() {
    return new PostgresLeaseStoreFactory().open(storeSettings());
  }

  @Override
  protected StoreRecipe storeRecipe() {
    return new StoreRecipe(PostgresLeaseStoreFactory.class, storeSettings());
  }

  @Override
  protected RunLedger<?> newLedger() {
    return new Factory().open(Map.of("url", PostgresServers.url()));
  }

  @Override
  protected LedgerRecipe ledgerRecipe() {
    return new LedgerRecipe(Factory.class, Map.of("url", PostgresServers.url()));
  }
}
