package dev.leases.consul;

import dev.leases.HolderId;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import okhttp3.HttpUrl;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okhttp3.ResponseBody;
import org.jspecify.annotations.Nullable;
import org.kiwiproject.consul.ConsulException;
import org.kiwiproject.consul.SessionClient;
import org.kiwiproject.consul.model.session.ImmutableSession;
import org.kiwiproject.consul.model.session.SessionCreatedResponse;
import org.kiwiproject.consul.util.Jackson;

/**
 * Creates the session of a new tenure: {@code TTL} in whole seconds, {@code LockDelay 0s},
 * {@code Behavior release}, named after the holder.
 *
 * <p>Why two ways: a session that Consul ends only by its TTL needs {@code "Checks": []} in the
 * request (otherwise the agent attaches its node's {@code serfHealth} check, and the session also
 * ends — possibly before its TTL — whenever that node is judged failed). The kiwiproject client
 * serialises requests with empty collections left out, so {@link SessionClient#createSession}
 * cannot send an empty check list. A store built from a URL therefore sends this one request
 * itself, over an OkHttp client that shares the kiwiproject client's connection pool, dispatcher,
 * TLS settings and token; a store built on a user's client can only go through
 * {@link SessionClient} and gets the {@code serfHealth} check.
 */
abstract class SessionCreator {

  private static final Pattern TTL_MIN_IN_ERROR = Pattern.compile("between \\[([^=\\]]+)=");
  private static final MediaType JSON = MediaType.get("application/json; charset=utf-8");

  /** Creates a session; an {@link IllegalArgumentException} if the server refuses the TTL. */
  abstract String create(HolderId holder, Duration ttl);

  /** Whether sessions end by their TTL only (no node health checks). */
  abstract boolean ttlOnly();

  /** Through the kiwiproject client: Consul adds the agent's {@code serfHealth} check. */
  static SessionCreator through(SessionClient sessions) {
    return new SessionCreator() {
      @Override
      String create(HolderId holder, Duration ttl) {
        ImmutableSession session = ImmutableSession.builder()
            .name(holder.value())
            .ttl(ttl.toSeconds() + "s")
            .lockDelay("0s")
            .behavior("release")
            .checks(List.of()) // dropped by the client's serialiser: see the class comment
            .build();
        try {
          return sessions.createSession(session).getId();
        } catch (ConsulException e) {
          throw refusedTtl(ttl, String.valueOf(e.getMessage()), e);
        }
      }

      @Override
      boolean ttlOnly() {
        return false;
      }
    };
  }

  /** A direct {@code PUT <url>/v1/session/create} with an explicitly empty check list. */
  static SessionCreator direct(OkHttpClient http, String url) {
    HttpUrl endpoint = HttpUrl.get(url.replaceAll("/+$", "") + "/v1/session/create");
    return new SessionCreator() {
      @Override
      String create(HolderId holder, Duration ttl) {
        String body = "{\"Name\":" + jsonString(holder.value())
            + ",\"TTL\":\"" + ttl.toSeconds() + "s\""
            + ",\"LockDelay\":\"0s\",\"Behavior\":\"release\",\"Checks\":[],\"NodeChecks\":[]}";
        Request.Builder request = new Request.Builder().url(endpoint)
            .put(RequestBody.create(body, JSON));
        try (Response response = http.newCall(request.build()).execute()) {
          ResponseBody rb = response.body();
          String text = rb == null ? "" : rb.string();
          if (!response.isSuccessful()) {
            throw refusedTtl(ttl, "Consul request to [" + endpoint + "] failed with status ["
                + response.code() + "]: " + text, null);
          }
          return Jackson.MAPPER.readValue(text, SessionCreatedResponse.class).getId();
        } catch (IOException e) {
          throw new ConsulException("Consul request to [" + endpoint + "] failed due to"
              + " IOException", e);
        }
      }

      @Override
      boolean ttlOnly() {
        return true;
      }
    };
  }

  /**
   * The server's refusal of a TTL as an {@link IllegalArgumentException} that says what to change;
   * any other error as a {@link ConsulException}.
   */
  private static RuntimeException refusedTtl(Duration ttl, String message, @Nullable ConsulException cause) {
    if (!message.contains("Invalid Session TTL")) {
      return cause != null ? cause : new ConsulException(message);
    }
    Matcher m = TTL_MIN_IN_ERROR.matcher(message);
    String min = m.find() ? m.group(1) : "its session_ttl_min";
    return new IllegalArgumentException("ttl " + ttl + " is refused by this Consul server: its"
        + " minimum session TTL (session_ttl_min, 10s unless configured) is " + min + ". Use a ttl"
        + " of at least " + min + ", or lower session_ttl_min in the server configuration (Consul"
        + " accepts down to 1s). Consul said: " + message, cause);
  }

  /** A JSON string literal; holder ids hold no control characters, so quotes and backslashes suffice. */
  static String jsonString(String s) {
    StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        sb.append('\\').append(c);
      } else if (c < 0x20) {
        sb.append(String.format("\\u%04x", (int) c));
      } else {
        sb.append(c);
      }
    }
    return sb.append('"').toString();
  }
}
