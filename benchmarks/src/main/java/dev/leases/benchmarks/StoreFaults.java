package dev.leases.benchmarks;

import dev.leases.LeaseStore;
import dev.leases.tck.process.StoreRecipe;
import dev.leases.tck.servers.LocalClusters;
import dev.leases.tck.servers.LocalClusters.ConsulCluster;
import dev.leases.tck.servers.LocalClusters.EtcdCluster;
import dev.leases.tck.servers.LocalClusters.Member;
import dev.leases.tck.servers.LocalClusters.RaftCluster;
import dev.leases.tck.servers.LocalClusters.RedisPair;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The stores the nemesis runs against and the store faults it injects into them, where the harness
 * controls the servers. With {@code --start-local} (and no explicit endpoint):
 * <ul>
 *   <li>etcd: a 3-member local cluster; each fault ({@code leader-kill} or {@code member-kill})
 *       kills one member with {@code SIGKILL} — the Raft leader or a follower, as the step's pick
 *       says — and starts it again from its data directory after the downtime. Workers get every
 *       member's endpoint.
 *   <li>Consul: a 3-server cluster (data directories, {@code bootstrap_expect 3},
 *       {@code session_ttl_min 1s}); the same two faults. Worker {@code n} uses server
 *       {@code n mod 3} as its agent, so a killed server also takes its workers' agent (and, once
 *       Serf notices, their sessions) with it.
 *   <li>Redis: a primary and a replica behind a proxy that serves as a virtual IP.
 *       {@code replica-promotion}: SIGKILL of the primary, {@code REPLICAOF NO ONE} on the replica,
 *       the virtual IP moved to it, then the old primary started again as the new one's replica.
 *       {@code store-restart}: SIGKILL of the primary and a restart without persistence on the same
 *       port (everything is lost; the replica resynchronises to empty).
 * </ul>
 * A loopback PostgreSQL gets {@code store-restart}: one server process killed with SIGKILL, so the
 * postmaster ends every session and runs crash recovery. None for the in-memory store nor external
 * servers.
 */
final class StoreFaults {

  private StoreFaults() {}

  /** One kind of store fault. */
  interface StoreFault {
    /** What it does, for the report. */
    String describe();

    /**
     * Takes (part of) the store down for about {@code downtimeMs}; returns once the fault is over
     * and the store serves again. {@code pick} chooses among members (and leader or not).
     */
    Hit inject(long downtimeMs, int pick) throws Exception;
  }

  /**
   * One injected store fault: its label for the report, what it hit, and when it ended (the store
   * served again; maintenance after that, like a rejoining replica, may follow before return).
   */
  record Hit(String label, String target, long endNanos) {}

  /** The backend as the nemesis uses it: its store faults and the recipe for each worker. */
  static final class Setup implements AutoCloseable {
    final Backend backend;
    final List<StoreFault> faults;
    private final List<StoreRecipe> recipes;
    private final AutoCloseable servers;

    Setup(Backend backend, List<StoreFault> faults, List<StoreRecipe> recipes,
        AutoCloseable servers) {
      this.backend = backend;
      this.faults = List.copyOf(faults);
      this.recipes = recipes.isEmpty() ? List.of(backend.recipe()) : List.copyOf(recipes);
      this.servers = servers;
    }

    /** Worker {@code n}'s recipe (workers are spread over a cluster's agents). */
    StoreRecipe recipe(int n) {
      return recipes.get(Math.floorMod(n, recipes.size()));
    }

    String describeFaults() {
      return String.join("; ", faults.stream().map(StoreFault::describe).toList());
    }

    @Override
    public void close() {
      try {
        backend.close();
      } finally {
        if (servers != null) {
          try {
            servers.close();
          } catch (Exception e) {
            // best effort
          }
        }
      }
    }
  }

  private static boolean given(String s) {
    return s != null && !s.isBlank();
  }

  /**
   * Starts the backend for the nemesis: replicated local servers where the harness starts them,
   * whose logs are copied into {@code logs} ({@code <backend>-<member>.log}) when they close.
   */
  static Setup start(Backends.Kind kind, BenchOptions o, Path logs) throws Exception {
    switch (kind.name()) {
      case "etcd" -> {
        if (o.startLocal && !given(o.etcdEndpoints)) {
          EtcdCluster c = EtcdCluster.start(3, 50, 500);
          c.keepLogsIn(logs, "etcd");
          String endpoints = c.endpoints();
          Backend b = new FactoryBackend("etcd", "etcd 3-member local cluster at " + endpoints,
              FactoryBackend.factoryClass(Backends.ETCD_FACTORY), Map.of("endpoints", endpoints),
              () -> FactoryBackend.etcdPut(endpoints, "leases-bench/plain/"), null);
          return new Setup(b, List.of(new MemberKill("etcd", c)), List.of(), c);
        }
      }
      case "consul" -> {
        if (o.startLocal && !given(o.consulUrl)) {
          ConsulCluster c = ConsulCluster.start(3);
          c.keepLogsIn(logs, "consul");
          List<StoreRecipe> recipes = new ArrayList<>();
          for (Member m : c.members()) {
            recipes.add(new StoreRecipe(FactoryBackend.factoryClass(Backends.CONSUL_FACTORY),
                Map.of("url", ConsulCluster.url(m))));
          }
          String first = ConsulCluster.url(c.members().get(0));
          Backend b = new FactoryBackend("consul", "Consul 3-server local cluster at "
              + c.members().stream().map(ConsulCluster::url).toList() + " (session_ttl_min 1s;"
              + " worker n uses server n mod 3)",
              FactoryBackend.factoryClass(Backends.CONSUL_FACTORY), Map.of("url", first),
              () -> FactoryBackend.consulPut(first, "leases-bench/plain/"), null);
          return new Setup(b, List.of(new MemberKill("Consul", c)), recipes, c);
        }
      }
      case "redis" -> {
        if (o.startLocal && !given(o.redisUri)) {
          RedisPair pair = RedisPair.start();
          pair.keepLogsIn(logs, "redis");
          try {
            Backend b = described(RedisBackend.start(pair.endpoint()), "Redis primary "
                + pair.primary() + " and replica " + pair.replica() + " (no persistence) behind"
                + " the virtual IP " + pair.endpoint());
            return new Setup(b, List.of(new RedisRestart(pair), new ReplicaPromotion(pair)),
                List.of(), pair);
          } catch (Exception e) {
            pair.close();
            throw e;
          }
        }
      }
      default -> {
        // below
      }
    }
    Backend b = kind.start(o);
    List<StoreFault> faults = new ArrayList<>();
    if (b instanceof PostgresBackend p && (p.url().contains("//127.0.0.1:")
        || p.url().contains("//localhost:"))) {
      faults.add(new PostgresCrash(p.url()));
    }
    return new Setup(b, faults, List.of(), null);
  }

  /** {@code backend} with another description. */
  private static Backend described(Backend backend, String description) {
    return new Backend() {
      @Override
      public String name() {
        return backend.name();
      }

      @Override
      public String description() {
        return description;
      }

      @Override
      public LeaseStore openStore() {
        return backend.openStore();
      }

      @Override
      public StoreRecipe recipe() {
        return backend.recipe();
      }

      @Override
      public Compared compared() throws Exception {
        return backend.compared();
      }

      @Override
      public Map<String, String> facts() {
        Map<String, String> f = new LinkedHashMap<>(backend.facts());
        f.put("origin", "local");
        return f;
      }

      @Override
      public void close() {
        backend.close();
      }
    };
  }

  static void kill(long pid) throws IOException, InterruptedException {
    Process k = new ProcessBuilder("kill", "-KILL", Long.toString(pid)).redirectErrorStream(true)
        .start();
    if (!k.waitFor(10, TimeUnit.SECONDS) || k.exitValue() != 0) {
      throw new IOException("kill -KILL " + pid + " failed: "
          + new String(k.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
    }
    Optional<ProcessHandle> h = ProcessHandle.of(pid);
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (h.isPresent() && h.get().isAlive() && System.nanoTime() < end) {
      Thread.sleep(10);
    }
  }

  /**
   * SIGKILL of one member of a Raft cluster — the leader when {@code pick} is even (and a leader is
   * known), else a follower chosen by {@code pick} — and its restart from its data directory.
   */
  private static final class MemberKill implements StoreFault {
    private final String product;
    private final RaftCluster cluster;

    MemberKill(String product, RaftCluster cluster) {
      this.product = product;
      this.cluster = cluster;
    }

    @Override
    public String describe() {
      return product + " member SIGKILL (the Raft leader or a follower) and restart from its data"
          + " directory";
    }

    @Override
    public Hit inject(long downtimeMs, int pick) throws Exception {
      Member leader = cluster.leader().orElse(null);
      List<Member> followers = cluster.members().stream().filter(m -> m != leader).toList();
      boolean onLeader = leader != null && (pick & 1) == 0;
      Member victim = onLeader ? leader : followers.get((pick >>> 1) % followers.size());
      victim.kill();
      Thread.sleep(downtimeMs);
      cluster.restart(victim);
      return new Hit(onLeader ? "leader-kill" : "member-kill", product + " " + victim.name()
          + (onLeader ? " (leader)" : leader == null ? " (no leader known)" : " (follower)"),
          System.nanoTime());
    }
  }

  /** SIGKILL of the Redis primary, then a fresh empty one on the same port. */
  private static final class RedisRestart implements StoreFault {
    private final RedisPair pair;

    RedisRestart(RedisPair pair) {
      this.pair = pair;
    }

    @Override
    public String describe() {
      return "store-restart: redis primary SIGKILL and restart on the same port without"
          + " persistence";
    }

    @Override
    public Hit inject(long downtimeMs, int pick) throws Exception {
      String target = "redis primary " + pair.primary().name();
      pair.restartPrimary(downtimeMs);
      long end = System.nanoTime();
      pair.awaitInSync(Duration.ofSeconds(60)); // before the next fault can promote the replica
      return new Hit("store-restart", target, end);
    }
  }

  /**
   * SIGKILL of the Redis primary, the replica promoted and the virtual IP moved to it; after the
   * downtime, the old primary rejoins as the new one's replica.
   */
  private static final class ReplicaPromotion implements StoreFault {
    private final RedisPair pair;

    ReplicaPromotion(RedisPair pair) {
      this.pair = pair;
    }

    @Override
    public String describe() {
      return "replica-promotion: redis primary SIGKILL, REPLICAOF NO ONE on the replica, the"
          + " virtual IP moved to it, the old primary back as its replica";
    }

    @Override
    public Hit inject(long downtimeMs, int pick) throws Exception {
      String target = pair.primary().name() + " -> " + pair.replica().name();
      pair.promote();
      long end = System.nanoTime();
      Thread.sleep(downtimeMs);
      pair.rejoin();
      return new Hit("replica-promotion", target, end);
    }
  }

  /** SIGKILL of one PostgreSQL server process: the postmaster restarts every session. */
  private static final class PostgresCrash implements StoreFault {
    private final String url;

    PostgresCrash(String url) {
      this.url = url;
    }

    @Override
    public String describe() {
      return "store-restart: PostgreSQL crash restart (SIGKILL of a server process: the postmaster"
          + " ends every session and runs crash recovery)";
    }

    @Override
    public Hit inject(long downtimeMs, int pick) throws Exception {
      try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
        rs.next();
        kill(rs.getLong(1)); // while its session is open: a closed one has exited already
      }
      long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (true) {
        Thread.sleep(100);
        try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
          s.execute("SELECT 1");
          return new Hit("store-restart", "postgres", System.nanoTime());
        } catch (java.sql.SQLException e) {
          if (System.nanoTime() > end) {
            throw new IOException("PostgreSQL did not accept connections within 60 s of the"
                + " crash: " + e, e);
          }
        }
      }
    }
  }
}
