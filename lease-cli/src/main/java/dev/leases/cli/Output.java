package dev.leases.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.leases.LeaseState;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Prints a command's results on standard output, as text for people or, with {@code --json}, one
 * JSON object per line (times as ISO-8601 strings from the store's clock, durations in ms).
 */
final class Output {

  private static final ObjectMapper JSON = new ObjectMapper()
      .disable(SerializationFeature.INDENT_OUTPUT);

  private final PrintWriter out;
  private final boolean json;

  Output(PrintWriter out, boolean json) {
    this.out = out;
    this.json = json;
  }

  boolean json() {
    return json;
  }

  /** Prints {@code fields} as one JSON object, or {@code text}. */
  void print(Map<String, Object> fields, String text) {
    if (json) {
      try {
        out.println(JSON.writeValueAsString(fields));
      } catch (JsonProcessingException e) {
        throw new IllegalStateException("cannot write " + fields.keySet() + " as JSON", e);
      }
    } else {
      out.println(text);
    }
    out.flush();
  }

  /** A state as JSON fields: name, status, lastToken, and holder and times where it has them. */
  static Map<String, Object> fields(LeaseState state) {
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("name", state.name());
    f.put("status", state.status().name());
    f.put("lastToken", state.lastToken());
    if (state instanceof LeaseState.Held h) {
      f.put("holder", h.holder().value());
      f.put("expiresAt", h.expiresAt().toString());
      f.put("remainingMillis", h.remaining().toMillis());
    } else if (state instanceof LeaseState.Expired e) {
      f.put("holder", e.holder().value());
      f.put("expiredAt", e.expiredAt().toString());
    }
    return f;
  }

  /** A state as one line of text. */
  static String text(LeaseState state) {
    String head = state.name() + "  " + state.status() + "  token " + state.lastToken();
    if (state instanceof LeaseState.Held h) {
      return head + "  holder " + h.holder().value() + "  expires " + h.expiresAt()
          + " (in " + h.remaining().toMillis() + " ms, by the store's clock)";
    }
    if (state instanceof LeaseState.Expired e) {
      return head + "  holder " + e.holder().value() + "  expired " + e.expiredAt()
          + " (not yet taken by anyone)";
    }
    return head;
  }

  void state(LeaseState state) {
    print(fields(state), text(state));
  }
}
