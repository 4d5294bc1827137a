package dev.leases.postgres;

import java.util.ArrayList;
import java.util.List;

/**
 * Reads what a client sent on one PostgreSQL connection (the frontend side of the wire protocol,
 * as {@link dev.leases.tck.servers.TcpProxy#clientBytes()} recorded it), to count round trips and
 * statements without timing anything; {@code sql} holds the text of every Query and Parse.
 */
record PgWire(List<Character> types, List<String> sql) {

  private static final int SSL_REQUEST = 80877103;
  private static final int GSS_REQUEST = 80877104;

  /** The typed messages in {@code bytes}, after the SSL/GSS requests and the startup packet. */
  static PgWire parse(byte[] bytes) {
    int at = 0;
    while (at + 8 <= bytes.length) { // untyped: SSL/GSS requests, then the startup packet
      int length = int32(bytes, at);
      int code = int32(bytes, at + 4);
      at += length;
      if (code != SSL_REQUEST && code != GSS_REQUEST) {
        break;
      }
    }
    List<Character> types = new ArrayList<>();
    List<String> sql = new ArrayList<>();
    while (at + 5 <= bytes.length) {
      char type = (char) bytes[at];
      int length = int32(bytes, at + 1);
      if (at + 1 + length > bytes.length) {
        break; // a message still in flight
      }
      types.add(type);
      if (type == 'Q') {
        sql.add(cString(bytes, at + 5));
      } else if (type == 'P') { // statement name, then the query
        int query = at + 5;
        while (bytes[query] != 0) {
          query++;
        }
        sql.add(cString(bytes, query + 1));
      }
      at += 1 + length;
    }
    return new PgWire(List.copyOf(types), List.copyOf(sql));
  }

  /**
   * Messages after which the client waits for the server: Sync ({@code S}) ends an extended-query
   * exchange, Query ({@code Q}) is a simple query. Each is one round trip, except a Query followed
   * at once by a Parse or Bind: pgjdbc sends a transaction's {@code BEGIN} that way, ahead of its
   * first statement and without waiting for its answer.
   */
  int roundTrips() {
    int trips = count('S');
    for (int i = 0; i < types.size(); i++) {
      boolean pipelined = i + 1 < types.size()
          && (types.get(i + 1) == 'P' || types.get(i + 1) == 'B');
      if (types.get(i) == 'Q' && !pipelined) {
        trips++;
      }
    }
    return trips;
  }

  /** Statements executed: Execute ({@code E}) messages plus simple queries. */
  int executes() {
    return count('E') + count('Q');
  }

  /** Parse messages: statements the server had to parse (not yet prepared on the connection). */
  int parses() {
    return count('P');
  }

  int count(char type) {
    int n = 0;
    for (char t : types) {
      if (t == type) {
        n++;
      }
    }
    return n;
  }

  /** What {@code later} holds beyond this, when {@code later} is this connection read again. */
  PgWire since(PgWire earlier) {
    return new PgWire(types.subList(earlier.types.size(), types.size()),
        sql.subList(earlier.sql.size(), sql.size()));
  }

  private static String cString(byte[] b, int from) {
    int end = from;
    while (end < b.length && b[end] != 0) {
      end++;
    }
    return new String(b, from, end - from, java.nio.charset.StandardCharsets.UTF_8);
  }

  private static int int32(byte[] b, int at) {
    return ((b[at] & 0xff) << 24) | ((b[at + 1] & 0xff) << 16) | ((b[at + 2] & 0xff) << 8)
        | (b[at + 3] & 0xff);
  }
}
