package dev.leases.benchmarks;

import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Writes nested {@link Map}s (objects, in their iteration order), {@link List}s, strings, numbers,
 * booleans and nulls as JSON. Non-finite numbers become {@code null}.
 */
final class Json {

  private Json() {}

  static String write(Object value) {
    StringBuilder sb = new StringBuilder();
    write(sb, value, "");
    return sb.append('\n').toString();
  }

  private static void write(StringBuilder sb, Object v, String indent) {
    if (v == null) {
      sb.append("null");
    } else if (v instanceof String s) {
      string(sb, s);
    } else if (v instanceof Double d && !Double.isFinite(d)
        || v instanceof Float f && !Float.isFinite(f)) {
      sb.append("null");
    } else if (v instanceof Number || v instanceof Boolean) {
      sb.append(v);
    } else if (v instanceof Map<?, ?> m) {
      if (m.isEmpty()) {
        sb.append("{}");
        return;
      }
      String inner = indent + "  ";
      sb.append("{\n");
      Iterator<? extends Map.Entry<?, ?>> it = m.entrySet().iterator();
      while (it.hasNext()) {
        Map.Entry<?, ?> e = it.next();
        sb.append(inner);
        string(sb, String.valueOf(e.getKey()));
        sb.append(": ");
        write(sb, e.getValue(), inner);
        sb.append(it.hasNext() ? ",\n" : "\n");
      }
      sb.append(indent).append('}');
    } else if (v instanceof List<?> l) {
      boolean flat = l.stream().allMatch(x -> x == null || x instanceof Number || x instanceof Boolean);
      if (flat) {
        sb.append('[');
        for (int i = 0; i < l.size(); i++) {
          write(sb, l.get(i), indent);
          if (i + 1 < l.size()) {
            sb.append(", ");
          }
        }
        sb.append(']');
        return;
      }
      String inner = indent + "  ";
      sb.append("[\n");
      for (int i = 0; i < l.size(); i++) {
        sb.append(inner);
        write(sb, l.get(i), inner);
        sb.append(i + 1 < l.size() ? ",\n" : "\n");
      }
      sb.append(indent).append(']');
    } else {
      string(sb, v.toString());
    }
  }

  private static void string(StringBuilder sb, String s) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    sb.append('"');
  }
}
