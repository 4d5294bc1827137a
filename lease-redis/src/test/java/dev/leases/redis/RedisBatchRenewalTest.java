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
 * renewal of a name the holder holds reads the lease with one {@code HMGET}, type-checks only the
 * fence (which it does not write), and writes the last tenure and the expiry; the lease's and the
 * last tenure's types are proven by the read and the write themselves, which fail with nothing
 * written when they are wrong.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisBatchRenewalTest {

  private static final Duration TTL = Duration.ofSeconds(30);

  /**
   * Commands run inside the scripts, counted by a dedicated server's {@code INFO commandstats}
   * (the shared one serves other tests): a batch renewal of N held names runs N {@code TYPE}s
   * (the full guard ran 3N), N {@code HMGET}s, N {@code HSET}s and N {@code PEXPIREAT}s, and no
   * other command but the script's one {@code TIME}. Tokens stay; the last tenure records the
   * new expiry, as the full script wrote it.
   */
  @Test
  void aBatchRenewalTypeChecksOnlyTheFenceOfEachName() throws Exception {
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
          "type", "hmget", "hset", "pexpireat");
      assertThat(calls).containsEntry("evalsha", 1L).containsEntry("time", 1L)
          .containsEntry("type", 100L).containsEntry("hmget", 100L)
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
   * A held name whose fence or lease key something else replaced with another type is refused
   * alone ({@code heldBy} empty) with nothing of it written, as by the full guard: the renewal
   * does not write the fence, yet still refuses over it.
   */
  @Test
  void aRenewalOverAForeignFenceOrLeaseKeyRefusesThatNameAndWritesNothing() {
    try (RedisAdmin admin = RedisAdmin.connect(RedisServers.sharedUri());
        RedisLeaseStore store = RedisLeaseStore.builder(RedisServers.sharedUri()).build()) {
      HolderId a = HolderId.generate();
      String base = "renew-" + UUID.randomUUID();
      String fenced = base + "-fence";
      String leased = base + "-lease";
      String fine = base + "-fine";
      List<String> names = List.of(fenced, leased, fine);
      store.acquireOrRenewAll(names, a, TTL);
      List<String> fk = store.keysOf(fenced);
      admin.sync().pexpire(fk.get(0), 600_000);
      admin.sync().del(fk.get(1));
      admin.sync().rpush(fk.get(1), "written by someone else");
      Map<String, String> lastBefore = admin.sync().hgetall(fk.get(2));
      List<String> lk = store.keysOf(leased);
      admin.sync().del(lk.get(0));
      admin.sync().set(lk.get(0), "written by someone else");
      Map<String, String> leasedLastBefore = admin.sync().hgetall(lk.get(2));

      Map<String, AcquireResult> r = store.acquireOrRenewAll(names, a, TTL);

      assertThat(r.get(fenced)).isEqualTo(AcquireResult.Refused.unexplained(fenced));
      assertThat(r.get(leased)).isEqualTo(AcquireResult.Refused.unexplained(leased));
      assertThat(r.get(fine)).isInstanceOf(AcquireResult.Granted.class);
      assertThat(admin.sync().pttl(fk.get(0))).as("not extended").isGreaterThan(300_000L);
      assertThat(new HashMap<>(admin.sync().hgetall(fk.get(2)))).isEqualTo(lastBefore);
      assertThat(admin.sync().lrange(fk.get(1), 0, -1)).containsExactly("written by someone else");
      assertThat(admin.sync().get(lk.get(0))).isEqualTo("written by someone else");
      assertThat(new HashMap<>(admin.sync().hgetall(lk.get(2)))).isEqualTo(leasedLastBefore);
    }
  }
}
