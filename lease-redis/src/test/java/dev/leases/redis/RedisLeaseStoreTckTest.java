package dev.leases.redis;

import dev.leases.LeaseStore;
import dev.leases.tck.LeaseStoreTck;
import dev.leases.tck.process.StoreRecipe;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The compatibility kit against the shared Redis server. */
class RedisLeaseStoreTckTest extends LeaseStoreTck {

  private static RedisAdmin admin;
  /** Only names the kit generates; lays out keys exactly as every store of the default prefix. */
  private static RedisLeaseStore layout;

  @BeforeAll
  static void open() {
    admin = RedisAdmin.connect(RedisServers.sharedUri());
    layout = RedisLeaseStore.builder(RedisServers.sharedUri()).build();
  }

  @AfterAll
  static void close() {
    layout.close();
    admin.close();
  }

  /**
   * A 10 s command timeout: the native batch is bounded as a whole by it, and the kit's
   * 10,000-name batch (ten 1,000-name scripts, about 150 ms on an idle machine) was measured at up to
   * 4 s on a test machine at load 20 on 2 cores. Scenarios that need a short bound use
   * {@link #newStoreVia}.
   */
  @Override
  protected LeaseStore newStore() {
    return RedisLeaseStore.builder(RedisServers.sharedUri()).commandTimeout(Duration.ofSeconds(10))
        .build();
  }

  @Override
  protected StoreRecipe storeRecipe() {
    return new StoreRecipe(RedisLeaseStoreFactory.class,
        Map.of(RedisLeaseStoreFactory.URI, RedisServers.sharedUri()));
  }

  @Override
  protected int storePort() {
    return java.net.URI.create(RedisServers.sharedUri()).getPort();
  }

  @Override
  protected LeaseStore newStoreVia(int port, Duration callTimeout) {
    return RedisLeaseStore.builder("redis://127.0.0.1:" + port).commandTimeout(callTimeout).build();
  }

  /**
   * A crash of the shared, non-persistent server: it comes back empty, counters and all (the store
   * clamps new tokens to the server's {@code TIME}). The kit's {@code admin} connection and every
   * other test class's clients reconnect by themselves.
   */
  @Override
  protected void restartStore() throws Exception {
    RedisServers.restartShared();
  }

  /** An operator's {@code DEL} of the lease and of its last-tenure record; the counter stays. */
  @Override
  protected void deleteOutOfBand(String name) {
    List<String> keys = layout.keysOf(name);
    admin.sync().del(keys.get(0), keys.get(2));
  }
}
