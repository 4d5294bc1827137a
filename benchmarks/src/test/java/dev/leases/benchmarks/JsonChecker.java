package dev.leases.benchmarks;

/** A strict recursive-descent JSON recognizer for tests: throws at the first error. */
final class JsonChecker {

  private final String s;
  private int i;

  private JsonChecker(String s) {
    this.s = s;
  }

  static void check(String json) {
    JsonChecker c = new JsonChecker(json);
    c.value();
    c.ws();
    if (c.i != json.length()) {
      throw c.error("trailing content");
    }
  }

  private IllegalArgumentException error(String what) {
    return new IllegalArgumentException(what + " at offset " + i + ": "
        + s.substring(Math.max(0, i - 30), Math.min(s.length(), i + 30)));
  }

  private void ws() {
    while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
      i++;
    }
  }

  private void value() {
    ws();
    if (i >= s.length()) {
      throw error("unexpected end");
    }
    char c = s.charAt(i);
    switch (c) {
      case '{' -> object();
      case '[' -> array();
      case '"' -> string();
      case 't' -> literal("true");
      case 'f' -> literal("false");
      case 'n' -> literal("null");
      default -> number();
    }
  }

  private void object() {
    i++;
    ws();
    if (peek('}')) {
      i++;
      return;
    }
    while (true) {
      ws();
      string();
      ws();
      expect(':');
      value();
      ws();
      if (peek(',')) {
        i++;
      } else {
        expect('}');
        return;
      }
    }
  }

  private void array() {
    i++;
    ws();
    if (peek(']')) {
      i++;
      return;
    }
    while (true) {
      value();
      ws();
      if (peek(',')) {
        i++;
      } else {
        expect(']');
        return;
      }
    }
  }

  private void string() {
    expect('"');
    while (i < s.length() && s.charAt(i) != '"') {
      char c = s.charAt(i);
      if (c < 0x20) {
        throw error("control character in string");
      }
      if (c == '\\') {
        i++;
        if (i >= s.length() || "\"\\/bfnrtu".indexOf(s.charAt(i)) < 0) {
          throw error("bad escape");
        }
        if (s.charAt(i) == 'u') {
          for (int k = 1; k <= 4; k++) {
            if (Character.digit(s.charAt(i + k), 16) < 0) {
              throw error("bad \\u escape");
            }
          }
          i += 4;
        }
      }
      i++;
    }
    expect('"');
  }

  private void number() {
    int start = i;
    while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
      i++;
    }
    String n = s.substring(start, i);
    if (!n.matches("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?")) {
      throw error("bad number '" + n + "'");
    }
  }

  private void literal(String word) {
    if (!s.startsWith(word, i)) {
      throw error("expected " + word);
    }
    i += word.length();
  }

  private boolean peek(char c) {
    return i < s.length() && s.charAt(i) == c;
  }

  private void expect(char c) {
    if (!peek(c)) {
      throw error("expected '" + c + "'");
    }
    i++;
  }
}
