package dev.leases.spring.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.FencedOutException;
import dev.leases.HolderId;
import dev.leases.once.RunLedger;
import dev.leases.once.RunRecord;
import dev.leases.postgres.PostgresServers;
import dev.leases.spring.LeaseContext;
import dev.leases.spring.RunOnce;
import dev.leases.spring.SpringJdbcFence;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;

/**
 * A {@code @RunOnce @Transactional} method and {@code SpringJdbcFence} in a {@code @Transactional}
 * method, in a real Spring Boot context on PostgreSQL: the business write, the fence check and the
 * completion record commit or roll back together.
 */
class TransactionalRunTest {

  static final String SUFFIX = PostgresContexts.fresh("tx");
  static ConfigurableApplicationContext ctx;

  @BeforeAll
  static void start() throws Exception {
    PostgresServers.exec("CREATE TABLE biz_" + SUFFIX + " (run text, token bigint)");
    ctx = PostgresContexts.start(App.class, concat(PostgresContexts.tables(PostgresContexts.url(),
        SUFFIX), "test.job=billing-" + SUFFIX, "test.biz=biz_" + SUFFIX));
  }

  @AfterAll
  static void stop() {
    if (ctx != null) {
      ctx.close();
    }
  }

  static List<String> concat(List<String> a, String... b) {
    List<String> out = new java.util.ArrayList<>(a);
    out.addAll(List.of(b));
    return out;
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    Billing billing(JdbcTemplate jdbc) {
      return new Billing(jdbc);
    }
  }

  public static class Billing {
    final JdbcTemplate jdbc;
    final AtomicReference<Consumer<Long>> during = new AtomicReference<>(t -> {});

    Billing(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
    }

    Billing() {
      this(null); // for the class-based proxy
    }

    @RunOnce(job = "${test.job}", run = "#p0")
    @Transactional
    public void bill(String day) {
      long token = LeaseContext.currentToken();
      jdbc.update("INSERT INTO " + table() + " (run, token) VALUES (?, ?)", day, token);
      during.get().accept(token);
    }

    @Transactional
    public void fencedWrite(SpringJdbcFence fence, String resource, long token, boolean fail) {
      jdbc.update("INSERT INTO " + table() + " (run, token) VALUES (?, ?)", resource + "-before",
          token);
      fence.write(resource, token, c -> {
        try (var ps = c.prepareStatement("INSERT INTO " + table() + " (run, token) VALUES (?, ?)")) {
          ps.setString(1, resource);
          ps.setLong(2, token);
          return ps.executeUpdate();
        }
      });
      if (fail) {
        throw new IllegalStateException("business rule broken after the fenced write");
      }
    }

    public void during(Consumer<Long> hook) {
      during.set(hook);
    }

    String table() {
      return "biz_" + SUFFIX;
    }
  }

  private Billing billing() {
    return ctx.getBean(Billing.class);
  }

  private int rows(String run) {
    return ctx.getBean(JdbcTemplate.class).queryForObject("SELECT count(*) FROM biz_" + SUFFIX + " WHERE run = ?",
        Integer.class, run);
  }

  @SuppressWarnings("unchecked")
  private RunLedger<Object> ledger() {
    return ctx.getBean(RunLedger.class);
  }

  private String job() {
    return "billing-" + SUFFIX;
  }

  @Test
  void aCompletedRunCommitsTheBusinessRowWithItsCompletionAndRunsOnce() {
    billing().bill("2026-01-31");
    billing().bill("2026-01-31");
    assertThat(rows("2026-01-31")).isEqualTo(1);
    assertThat(ledger().completion(job(), "2026-01-31")).isPresent();
  }

  @Test
  void anExceptionRollsBackTheBusinessRowAndLeavesTheRunIncomplete() {
    billing().during(t -> {
      throw new IllegalStateException("payment provider down");
    });
    try {
      assertThatThrownBy(() -> billing().bill("2026-02-01"))
          .isInstanceOf(IllegalStateException.class).hasMessage("payment provider down");
    } finally {
      billing().during(t -> {});
    }
    assertThat(rows("2026-02-01")).isZero();
    assertThat(ledger().completion(job(), "2026-02-01")).isEmpty();
    assertThat(ledger().history(job(), 10)).anySatisfy(r -> {
      assertThat(r.run()).isEqualTo("2026-02-01");
      assertThat(r.status()).isEqualTo(RunRecord.Status.FAILED);
    });
    billing().bill("2026-02-01"); // the next firing runs it
    assertThat(rows("2026-02-01")).isEqualTo(1);
  }

  @Test
  void aFencedOutTokenRollsBackTheBusinessRowAndTheCompletion() {
    billing().during(token ->
        // a successor takes the job over while this run works: its begin raises the job's fence
        ledger().begin(job(), "2026-02-02", token + 1000, HolderId.generate()));
    try {
      assertThatThrownBy(() -> billing().bill("2026-02-02"))
          .isInstanceOf(FencedOutException.class);
    } finally {
      billing().during(t -> {});
    }
    assertThat(rows("2026-02-02")).isZero();
    assertThat(ledger().completion(job(), "2026-02-02")).isEmpty();
  }

  @Test
  void springJdbcFenceJoinsTheTransaction() {
    SpringJdbcFence fence = ctx.getBean(SpringJdbcFence.class);
    String res = PostgresContexts.fresh("res");
    billing().fencedWrite(fence, res, 5, false);
    assertThat(rows(res)).isEqualTo(1);
    assertThat(rows(res + "-before")).isEqualTo(1);

    // a lower token: rejected, and the write made before the fence check rolls back with it
    assertThatThrownBy(() -> billing().fencedWrite(fence, res, 3, false))
        .isInstanceOf(FencedOutException.class);
    assertThat(rows(res)).isEqualTo(1);
    assertThat(rows(res + "-before")).isEqualTo(1);

    // an exception after the fenced write: the fence advance rolls back with the business rows
    assertThatThrownBy(() -> billing().fencedWrite(fence, res, 9, true))
        .isInstanceOf(IllegalStateException.class);
    assertThat(rows(res)).isEqualTo(1);
    assertThat(fence.highestToken(res)).hasValue(5);
  }
}
