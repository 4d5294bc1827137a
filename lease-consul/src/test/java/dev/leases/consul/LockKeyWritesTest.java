package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.leases.HolderId;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.tck.servers.TcpProxy;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.kiwiproject.consul.Consul;

/**
 * What the store sends, read off the wire: through a recording proxy, a store goes through every
 * path (acquire of an absent key, of a released key, of an expired key, renewals, a refused
 * contender, release, a takeover by a holder with a session, a renewal after an out-of-band
 * delete), and every request is checked: the lock key is never written by a KV PUT or DELETE, only
 * by transactions whose lock and unlock carry a session and whose delete is followed by a lock of
 * the same key with a session; a delete is either a check-and-set at a known index or comes after
 * a lock of the same key with that same session (which rolls back unless the key is free).
 */
class LockKeyWritesTest {

  private static final Set<String> ALLOWED_VERBS =
      Set.of("lock", "unlock", "check-session", "check-not-exists", "delete-cas", "delete");

  private record Request(String method, String path, String body) {}

  @Test
  void theLockKeyIsOnlyEverWrittenUnderASession() throws Exception {
    String prefix = "tests/writes-" + UUID.randomUUID().toString().substring(0, 8);
    Duration ttl = Duration.ofSeconds(1);
    try (TcpProxy proxy = new TcpProxy(URI.create(ConsulServers.sharedUrl()).getPort());
        ConsulLeaseStore s = ConsulLeaseStore.builder("http://127.0.0.1:" + proxy.port()).keyPrefix(prefix).build()) {
      Consul admin = Consul.builder().withUrl(ConsulServers.sharedUrl()).withPing(false).build();
      try {
        String n = "writes " + UUID.randomUUID();
        HolderId a = HolderId.generate();
        HolderId b = HolderId.generate();
        LeaseStore.Subscription sub = s.onRelease(n, () -> {});
        s.acquireOrRenew(n, a, ttl).orElseThrow();            // absent key: check-not-exists
        for (int i = 0; i < 3; i++) {
          s.acquireOrRenew(n, a, ttl).orElseThrow();          // renewals: check-session + lock
        }
        assertThat(s.acquireOrRenew(n, b, ttl)).isEmpty();    // refused: reads only
        s.inspect(n);
        s.token(n);
        assertThat(s.release(n, a)).isTrue();                 // check-session + unlock
        s.acquireOrRenew(n, b, ttl).orElseThrow();            // released key: delete-cas + lock
        HolderId c = HolderId.generate();
        Duration longer = Duration.ofSeconds(30);
        s.acquireOrRenew(n + " c", c, longer).orElseThrow();  // c's session
        assertThat(s.release(n, b)).isTrue();
        s.acquireOrRenew(n, c, longer).orElseThrow();         // c, no read: lock + delete + lock
        assertThat(s.release(n, c)).isTrue();
        assertThat(s.release(n + " c", c)).isTrue();
        s.acquireOrRenew(n, b, ttl).orElseThrow();
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50))
            .until(() -> s.inspect(n) instanceof LeaseState.Expired);
        s.acquireOrRenew(n, a, ttl).orElseThrow();            // expired key: delete-cas + lock
        admin.keyValueClient().deleteKey(s.keyOf(n));        // out of band, not through the proxy
        s.acquireOrRenew(n, a, ttl).orElseThrow();            // renewal fails, new tenure
        assertThat(s.release(n, a)).isTrue();
        sub.close();
      } finally {
        admin.destroy();
      }

      List<Request> requests = new ArrayList<>();
      for (byte[] connection : proxy.clientBytes()) {
        requests.addAll(parse(connection));
      }
      Set<String> verbsSeen = new HashSet<>();
      int transactions = 0;
      for (Request r : requests) {
        String path = URLDecoder.decode(r.path(), StandardCharsets.UTF_8);
        if (path.startsWith("/v1/kv/")) {
          assertThat(r.method()).as("KV request %s", path).isEqualTo("GET");
        }
        if (!path.startsWith("/v1/txn")) {
          continue;
        }
        transactions++;
        JsonNode ops = RawHttp.JSON.readTree(r.body());
        String deletedKey = null;
        String deletedUnder = null; // the session whose lock came before an unconditional delete
        JsonNode previous = null;
        for (JsonNode op : ops) {
          JsonNode kv = op.has("KV") ? op.get("KV") : op.get("kv"); // kiwiproject writes "kv"
          assertThat(kv).as("only KV operations: %s", op).isNotNull();
          assertThat(op.size()).isEqualTo(1);
          String key = kv.get("Key").asText();
          String verb = kv.get("Verb").asText();
          assertThat(key).startsWith(prefix + "/");
          assertThat(verb).as("verb on %s", key).isIn(ALLOWED_VERBS);
          verbsSeen.add(verb);
          if (verb.equals("lock") || verb.equals("unlock") || verb.equals("check-session")) {
            assertThat(kv.get("Session").asText("")).as("%s carries a session", verb).isNotBlank();
          }
          if (verb.equals("delete-cas")) {
            assertThat(kv.get("Index").asLong()).as("delete only at a known index").isPositive();
            deletedKey = key;
          }
          if (verb.equals("delete")) {
            assertThat(previous).as("an unconditional delete comes after a lock of the same key")
                .isNotNull();
            assertThat(previous.get("Verb").asText() + " " + previous.get("Key").asText())
                .as("the operation before an unconditional delete").isEqualTo("lock " + key);
            deletedKey = key;
            deletedUnder = previous.get("Session").asText();
          }
          if (verb.equals("lock") && deletedKey != null) {
            assertThat(key).as("a delete is followed by a lock of the same key").isEqualTo(deletedKey);
            if (deletedUnder != null) {
              assertThat(kv.get("Session").asText()).as("relocked by the session that checked it")
                  .isEqualTo(deletedUnder);
            }
            deletedKey = null;
            deletedUnder = null;
          }
          previous = kv;
        }
        assertThat(deletedKey).as("delete-cas without a lock after it").isNull();
      }
      assertThat(transactions).isPositive();
      assertThat(verbsSeen).as("every path was exercised").containsAll(ALLOWED_VERBS);
    }
  }

  /** Splits one connection's bytes into HTTP/1.1 requests (OkHttp sends bodies with a length). */
  private static List<Request> parse(byte[] bytes) {
    List<Request> out = new ArrayList<>();
    String text = new String(bytes, StandardCharsets.ISO_8859_1);
    int at = 0;
    while (at < text.length()) {
      int headEnd = text.indexOf("\r\n\r\n", at);
      if (headEnd < 0) {
        break;
      }
      String[] lines = text.substring(at, headEnd).split("\r\n");
      String[] requestLine = lines[0].split(" ");
      int length = 0;
      for (String h : lines) {
        if (h.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
          length = Integer.parseInt(h.substring(h.indexOf(':') + 1).trim());
        }
        assertThat(h.toLowerCase(Locale.ROOT)).as("bodies have a length")
            .doesNotStartWith("transfer-encoding");
      }
      int bodyStart = headEnd + 4;
      String body = new String(bytes, bodyStart, Math.min(length, bytes.length - bodyStart),
          StandardCharsets.UTF_8);
      String target = requestLine[1];
      int q = target.indexOf('?');
      out.add(new Request(requestLine[0], q < 0 ? target : target.substring(0, q), body));
      at = bodyStart + length;
    }
    return out;
  }
}
