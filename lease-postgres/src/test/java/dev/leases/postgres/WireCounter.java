package dev.leases.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leases.tck.servers.TcpProxy;
import java.util.List;

/**
 * Counts what the connections through a {@link TcpProxy} to the shared test server sent since the
 * last look ({@link #look}): round trips, statements executed and parsed. Counts only connections
 * that have ever carried a statement naming {@code table}: HikariCP opens connections in the
 * background (its housekeeper tops the pool up to its minimum idle while a call holds the only
 * connection), and their set-up (the pool's session statements, the driver's validity check) went
 * through the proxy while a measured call ran, under the test command's load, and was counted as
 * that call's, also when the connection had been opened, but had sent nothing yet, at the last
 * look.
 */
final class WireCounter {

  /** Round trips, statements executed and statements parsed. */
  record Calls(int roundTrips, int executes, int parses) {}

  private final TcpProxy proxy;
  private final String table;
  private List<PgWire> seen;

  WireCounter(TcpProxy proxy, String table) {
    this.proxy = proxy;
    this.table = table;
    this.seen = read();
  }

  /**
   * Round trips, statements executed and parsed, the SQL sent and the types of the messages sent
   * (one letter each, as the protocol names them: {@code PBDES} is Parse, Bind, Describe, Execute,
   * Sync), since the last look.
   */
  record Look(int roundTrips, int executes, int parses, List<String> sql, String messages) {
    /** The counts alone. */
    Calls calls() {
      return new Calls(roundTrips, executes, parses);
    }
  }

  /** What was sent since the last look (or since this counter was made). */
  Look look() {
    int trips = 0;
    int executes = 0;
    int parses = 0;
    List<String> sql = new java.util.ArrayList<>();
    StringBuilder messages = new StringBuilder();
    for (PgWire w : sent()) {
      w.types().forEach(messages::append);
      trips += w.roundTrips();
      executes += w.executes();
      parses += w.parses();
      sql.addAll(w.sql());
    }
    return new Look(trips, executes, parses, List.copyOf(sql), messages.toString());
  }

  private List<PgWire> read() {
    return proxy.clientBytes().stream().map(PgWire::parse).toList();
  }

  /** What each counted connection sent since the last look, and moves the look on. */
  private List<PgWire> sent() {
    List<PgWire> now = read();
    List<PgWire> out = new java.util.ArrayList<>();
    for (int c = 0; c < now.size(); c++) {
      if (now.get(c).sql().stream().noneMatch(q -> q.contains(table))) {
        continue; // a connection the pool opened, that has served none of the calls
      }
      PgWire s = c < seen.size() ? now.get(c).since(seen.get(c)) : now.get(c);
      out.add(s);
    }
    seen = now;
    return out;
  }

  static int serverPort() {
    return Integer.parseInt(PostgresServers.url()
        .replaceFirst("^jdbc:postgresql://[^:/]+:(\\d+)/.*$", "$1"));
  }

  /** The shared server's JDBC URL, through {@code proxy}. */
  static String urlThrough(TcpProxy proxy) {
    return PostgresServers.url().replaceFirst(":" + serverPort() + "/", ":" + proxy.port() + "/");
  }

  /** A pool of two connections configured with nothing but its URL, as the README's example. */
  static HikariDataSource urlOnlyPool(String url) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setMaximumPoolSize(2);
    return new HikariDataSource(config);
  }
}
