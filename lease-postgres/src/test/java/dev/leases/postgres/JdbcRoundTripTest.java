package dev.leases.postgres;

import static dev.leases.postgres.WireCounter.serverPort;
import static dev.leases.postgres.WireCounter.urlOnlyPool;
import static dev.leases.postgres.WireCounter.urlThrough;
import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.leases.HolderId;
import dev.leases.once.RunRecord;
import dev.leases.tck.servers.TcpProxy;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What {@link JdbcFence} and {@link JdbcRunLedger} send on the caller's pool configured as the
 * README's example is, with nothing but its URL, read off the wire through a {@link TcpProxy}:
 * HikariCP hands out its connections at the server's default level, READ COMMITTED, and puts back
 * any other level on return, so neither sets the level before every call ({@code SET SESSION
 * CHARACTERISTICS}, a round trip of its own) nor asks it ({@code SHOW TRANSACTION ISOLATION
 * LEVEL}, another) of a connection it has just taken from such a pool.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JdbcRoundTripTest {

  /** pgjdbc prepares a statement on the server at its fifth use on a connection. */
  private static final int WARM_UP = 8;

  @Test
  void aFencedWriteIsItsFenceAndItsCommitOnAPoolConfiguredWithOnlyItsUrl() throws Exception {
    String table = PostgresServers.freshTable();
    try (TcpProxy proxy = new TcpProxy(serverPort());
        HikariDataSource pool = urlOnlyPool(urlThrough(proxy))) {
      JdbcFence fence = JdbcFence.builder(pool).table(table).build();
      String resource = "trip-" + UUID.randomUUID();
      for (int token = 1; token <= WARM_UP; token++) {
        fence.write(resource, token, c -> null);
      }
      WireCounter wire = new WireCounter(proxy, table);
      fence.write(resource, WARM_UP + 1, c -> null);
      WireCounter.Look write = wire.look();
      assertThat(write.roundTrips()).as("a fenced write with no work: the fence (its"
          + " transaction's BEGIN sent with it), then the commit; sent %s as %s", write.sql(),
          write.messages()).isEqualTo(2);
    }
  }

  @Test
  void aRunsBeginAndCompletionSetNoLevelAndAskNoneOnAPoolConfiguredWithOnlyItsUrl()
      throws Exception {
    String table = PostgresServers.freshTable();
    String fenceTable = PostgresServers.freshTable();
    try (TcpProxy proxy = new TcpProxy(serverPort());
        HikariDataSource pool = urlOnlyPool(urlThrough(proxy))) {
      JdbcRunLedger ledger = JdbcRunLedger.builder(pool).table(table).fenceTable(fenceTable)
          .build();
      String job = "trip-" + UUID.randomUUID();
      HolderId holder = HolderId.generate();
      for (int i = 0; i < WARM_UP; i++) {
        RunRecord started = ledger.begin(job, "warm-" + i, i + 1, holder);
        ledger.complete(started, c -> { });
        ledger.completion(job, "warm-" + i).orElseThrow();
      }
      WireCounter wire = new WireCounter(proxy, table);
      RunRecord started = ledger.begin(job, "measured", WARM_UP + 1, holder);
      WireCounter.Look begin = wire.look();
      assertThat(begin.roundTrips()).as("begin: the fence (BEGIN sent with it), the completion's"
          + " read, the insert, the commit; sent %s as %s", begin.sql(), begin.messages())
          .isEqualTo(4);
      ledger.complete(started, c -> { });
      WireCounter.Look complete = wire.look();
      assertThat(complete.roundTrips()).as("complete: the cut-off (BEGIN sent with it), the"
          + " fence, the finish, the commit; sent %s as %s", complete.sql(), complete.messages())
          .isEqualTo(4);
      ledger.completion(job, "measured").orElseThrow();
      WireCounter.Look completion = wire.look();
      assertThat(completion.roundTrips()).as("completion: one read; sent %s as %s",
          completion.sql(), completion.messages()).isEqualTo(1);
    }
  }
}
