package dev.leases.redis;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The command names a client sent on one Redis connection (RESP arrays of bulk strings, as
 * {@link dev.leases.tck.servers.TcpProxy#clientBytes()} recorded them), upper case, in order: to
 * count the commands of a call without timing anything.
 */
final class RespCommands {

  private RespCommands() {}

  /** Every complete command in {@code bytes}; a command still in flight is left out. */
  static List<String> parse(byte[] bytes) {
    List<String> names = new ArrayList<>();
    int[] at = {0};
    while (at[0] < bytes.length && bytes[at[0]] == '*') {
      int start = at[0];
      Integer count = number(bytes, at, '*');
      String first = null;
      for (int i = 0; count != null && i < count; i++) {
        Integer length = number(bytes, at, '$');
        if (length == null || at[0] + length + 2 > bytes.length) {
          count = null;
          break;
        }
        if (i == 0) {
          first = new String(bytes, at[0], length, StandardCharsets.UTF_8);
        }
        at[0] += length + 2;
      }
      if (count == null) {
        at[0] = start;
        break;
      }
      names.add(first == null ? "" : first.toUpperCase(Locale.ROOT));
    }
    return names;
  }

  /** Reads {@code <marker><digits>\r\n} at {@code at}, or null if it is not all there yet. */
  private static Integer number(byte[] b, int[] at, char marker) {
    if (at[0] >= b.length || b[at[0]] != marker) {
      return null;
    }
    int n = 0;
    int i = at[0] + 1;
    for (; i < b.length && b[i] != '\r'; i++) {
      n = n * 10 + (b[i] - '0');
    }
    if (i + 1 >= b.length) {
      return null;
    }
    at[0] = i + 2;
    return n;
  }
}
