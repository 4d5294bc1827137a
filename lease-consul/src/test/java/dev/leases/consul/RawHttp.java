package dev.leases.consul;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;

/** Plain HTTP to a Consul agent, for tests that look at what the store did from the outside. */
final class RawHttp {

  static final ObjectMapper JSON = new ObjectMapper();

  private RawHttp() {}

  /** GET {@code path}; the parsed JSON body, or null on 404. */
  static JsonNode get(String baseUrl, String path) {
    return call(baseUrl, "GET", path, null, null);
  }

  /** PUT {@code body} to {@code path}; the parsed JSON answer. */
  static JsonNode put(String baseUrl, String path, String body) {
    return call(baseUrl, "PUT", path, body, null);
  }

  /** PUT with an ACL token. */
  static JsonNode put(String baseUrl, String path, String body, String token) {
    return call(baseUrl, "PUT", path, body, token);
  }

  /** {@code method} on {@code path} without a body; the parsed JSON answer, or null on 404. */
  static JsonNode call(String baseUrl, String method, String path) {
    return call(baseUrl, method, path, null, null);
  }

  private static JsonNode call(String baseUrl, String method, String path, String body,
      String token) {
    try {
      HttpURLConnection c = (HttpURLConnection) new URL(baseUrl + path).openConnection();
      c.setRequestMethod(method);
      c.setConnectTimeout(2000);
      c.setReadTimeout(5000);
      if (token != null) {
        c.setRequestProperty("X-Consul-Token", token);
      }
      if (body != null) {
        c.setDoOutput(true);
        try (OutputStream out = c.getOutputStream()) {
          out.write(body.getBytes(StandardCharsets.UTF_8));
        }
      }
      int code = c.getResponseCode();
      if (code == 404) {
        return null;
      }
      try (InputStream in = code < 400 ? c.getInputStream() : c.getErrorStream()) {
        String text = in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8);
        if (code >= 400) {
          throw new IllegalStateException(method + " " + path + " answered " + code + ": " + text);
        }
        return JSON.readTree(text);
      } finally {
        c.disconnect();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
