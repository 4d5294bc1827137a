package dev.leases.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leases.AcquireResult;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a renewal costs the server, and that its short path keeps the full script's outcomes. A
 * renewal of a name the holder holds reads the lease with one {@code HMGET} and writes the last
 * tenure and the expiry; the lease's and the last tenure's types are proven by the read and the
 * write themselves, which fail with nothing written when they are wrong. The fence, which a
 * renewal neither reads nor writes, is left to the next grant.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisBatchRenewalTest {

  private static final Duration TTL = Duration.ofSeconds(30);

  /**
   * Commands run inside the scripts, counted by a dedicated server's {@code INFO commandstats}
   * (the shared one serves other tests): a batch renewal of N held names runs no {@code TYPE}
   * (the full guard ran 3N), N {@code HMGET}s, N {@code HSET}s and N {@code PEXPIREAT}s, and no
   * other command but the script's one {@code TIME}. Tokens stay; the last tenure records the
   * new expiry, as the full script wrote it.
   */
  @Test
  void aBatchRenewalRunsNoTypeCheck() throws Exception {
    try (RedisProcess server = RedisProcess.start();
        RedisAdmin admin = RedisAdmin.connect(server.uri());
        RedisLeaseStore store = RedisLeaseStore.builder(server.uri()).build()) {
      HolderId a = HolderId.generate();
      List<String> names = new ArrayList<>();
      for (int i = 0; i < 100; i++) {
        names.add("renew-" + i);
      }
      Map<String, AcquireResult> acquired = store.acquireOrRenewAll(names, a, TTL);
      admin.sync().configResetstat();

      Map<String, AcquireResult> renewed = store.acquireOrRenewAll(names, a, TTL);

      Map<String, Long> calls = new HashMap<>(admin.commandCalls());
      calls.remove("config|resetstat");
      assertThat(calls).as("commands the renewal ran").containsOnlyKeys("evalsha", "time",
          "hmget", "hset", "pexpireat");
      assertThat(calls).containsEntry("evalsha", 1L).containsEntry("time", 1L)
          .containsEntry("hmget", 100L)
          .containsEntry("hset", 100L).containsEntry("pexpireat", 100L);
      for (String n : names) {
        LeaseGrant g = renewed.get(n).grant().orElseThrow();
        assertThat(g.token()).isEqualTo(acquired.get(n).grant().orElseThrow().token());
        List<String> k = store.keysOf(n);
        assertThat(admin.sync().hget(k.get(2), "exp"))
            .isEqualTo(Long.toString(g.expiresAt().toEpochMilli()));
        assertThat(admin.sync().hget(k.get(2), "token")).isEqualTo(Long.toString(g.token()));
        assertThat(admin.sync().hget(k.get(2), "holder")).isEqualTo(a.value());
      }
    }
  }

  /**
   * A held name whose lease or last-tenure key something else replaced with another type is
   * refused alone ({@code heldBy} empty) with nothing of it written, as by the full guard. A
   * foreign fence, which a renewal neither reads nor writes, does not stop the renewal (same
   * token, expiry moved); the next grant of the name refuses over it, with nothing written.
   */
  @Test
  void aRenewalOverAForeignLeaseOrLastKeyRefusesThatNameAndTheNextGrantRefusesOverAForeignFence() {
    try (RedisAdmin admin = RedisAdmin.connect(RedisServers.sharedUri());
        RedisLeaseStore store = RedisLeaseStore.builder(RedisServers.sharedUri()).build()) {
      HolderId a = HolderId.generate();
      String base = "renew-" + UUID.randomUUID();
      String fenced = base + "-fence";
      String leased = base + "-lease";
      String lasted = base + "-last";
      String fine = base + "-fine";
      List<String> names = List.of(fenced, leased, lasted, fine);
      Map<String, AcquireResult> first = store.acquireOrRenewAll(names, a, TTL);
      List<String> fk = store.keysOf(fenced);
      admin.sync().pexpire(fk.get(0), 600_000);
      admin.sync().del(fk.get(1));
      admin.sync().rpush(fk.get(1), "written by someone else");
      List<String> lk = store.keysOf(leased);
      admin.sync().del(lk.get(0));
      admin.sync().set(lk.get(0), "written by someone else");
      Map<String, String> leasedLastBefore = admin.sync().hgetall(lk.get(2));
      List<String> tk = store.keysOf(lasted);
      admin.sync().pexpire(tk.get(0), 600_000);
      admin.sync().del(tk.get(2));
      admin.sync().set(tk.get(2), "written by someone else");

      Map<String, AcquireResult> r = store.acquireOrRenewAll(names, a, TTL);

      assertThat(r.get(fenced).grant().orElseThrow().token())
          .isEqualTo(first.get(fenced).grant().orElseThrow().token());
      assertThat(admin.sync().pttl(fk.get(0))).as("extended to the TTL").isBetween(1L, 30_000L);
      assertThat(r.get(leased)).isEqualTo(AcquireResult.Refused.unexplained(leased));
      assertThat(admin.sync().get(lk.get(0))).isEqualTo("written by someone else");
      assertThat(new HashMap<>(admin.sync().hgetall(lk.get(2)))).isEqualTo(leasedLastBefore);
      assertThat(r.get(lasted)).isEqualTo(AcquireResult.Refused.unexplained(lasted));
      assertThat(admin.sync().pttl(tk.get(0))).as("not extended").isGreaterThan(300_000L);
      assertThat(admin.sync().get(tk.get(2))).isEqualTo("written by someone else");
      assertThat(r.get(fine)).isInstanceOf(AcquireResult.Granted.class);

      assertThat(store.release(fenced, a)).isTrue();
      Map<String, String> fencedLastBefore = admin.sync().hgetall(fk.get(2));
      assertThat(store.acquireOrRenewAll(List.of(fenced), a, TTL).get(fenced))
          .isEqualTo(AcquireResult.Refused.unexplained(fenced));
      assertThat(admin.sync().exists(fk.get(0))).as("no lease written").isZero();
      assertThat(new HashMap<>(admin.sync().hgetall(fk.get(2)))).isEqualTo(fencedLastBefore);
      assertThat(admin.sync().lrange(fk.get(1), 0, -1)).containsExactly("written by someone else");
    }
  }

  /**
   * A renewal copies the token's text from the lease to the last tenure only when it is a
   * canonical decimal that a Lua number holds exactly; text written by something else ("0x10",
   * "inf", "1e3", " 5") is refused, not renewed, and not copied.
   */
  @Test
  void aRenewalOverATamperedTokenTextIsRefusedAndCopiesNothing() {
    try (RedisAdmin admin = RedisAdmin.connect(RedisServers.sharedUri());
        RedisLeaseStore store = RedisLeaseStore.builder(RedisServers.sharedUri()).build()) {
      HolderId a = HolderId.generate();
      for (String text : List.of("0x10", "inf", "1e3", " 5", "0012", "1234567890123456")) {
        String name = "tampered-" + UUID.randomUUID();
        store.acquireOrRenew(name, a, TTL).orElseThrow();
        List<String> k = store.keysOf(name);
        admin.sync().hset(k.get(0), "token", text);
        Map<String, String> lastBefore = admin.sync().hgetall(k.get(2));

        assertThat(store.acquireOrRenew(name, a, TTL)).as(text).isEmpty();
        assertThat(store.acquireOrRenewAll(List.of(name), a, TTL).get(name).grant()).as(text)
            .isEmpty();
        assertThat(new HashMap<>(admin.sync().hgetall(k.get(2)))).as(text).isEqualTo(lastBefore);
      }
    }
  }
}
