package dev.leases.benchmarks;

import dev.leases.tck.servers.LocalProcessServer;
import dev.leases.tck.servers.LocalServers;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The backends the harness knows. To add one, add a {@link Kind} to {@link #ALL}: a name, what it
 * needs, and how to start a {@link Backend} (for a store given by its factory class,
 * {@link FactoryBackend} does the rest).
 */
final class Backends {

  /** A backend the harness can include: says what is missing, or starts it. */
  interface Kind {
    String name();

    /** Null when it can be started with these options; otherwise exactly how to include it. */
    String missing(BenchOptions o);

    Backend start(BenchOptions o) throws Exception;
  }

  static final String ETCD_FACTORY = "dev.leases.etcd.EtcdLeaseStoreFactory";
  static final String CONSUL_FACTORY = "dev.leases.consul.ConsulLeaseStoreFactory";

  static final List<Kind> ALL = List.of(
      kind("memory", o -> null, o -> new MemoryBackend()),
      kind("postgres", o -> null, o -> PostgresBackend.start(o.postgresUrl)),
      kind("redis", Backends::redisMissing, o -> RedisBackend.start(o.redisUri)),
      kind("etcd", Backends::etcdMissing, Backends::startEtcd),
      kind("consul", Backends::consulMissing, Backends::startConsul),
      kind("custom", Backends::customMissing, o -> new FactoryBackend("custom",
          o.customFactory + " " + o.customSettings.keySet(),
          FactoryBackend.factoryClass(o.customFactory), o.customSettings, null, null)));

  private Backends() {}

  static List<String> names() {
    return ALL.stream().map(Kind::name).toList();
  }

  static Optional<Kind> find(String name) {
    return ALL.stream().filter(k -> k.name().equals(name)).findFirst();
  }

  private interface Missing {
    String check(BenchOptions o);
  }

  private interface Starter {
    Backend start(BenchOptions o) throws Exception;
  }

  private static Kind kind(String name, Missing missing, Starter starter) {
    return new Kind() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public String missing(BenchOptions o) {
        return missing.check(o);
      }

      @Override
      public Backend start(BenchOptions o) throws Exception {
        return starter.start(o);
      }
    };
  }

  private static boolean given(String s) {
    return s != null && !s.isBlank();
  }

  private static String redisMissing(BenchOptions o) {
    if (given(o.redisUri)) {
      return null;
    }
    boolean installed = LocalProcessServer.findBinary("redis-server").isPresent();
    if (o.startLocal && installed) {
      return null;
    }
    return "set LEASES_REDIS_URI=redis://127.0.0.1:6379 (or --redis-uri), or add --start-local to"
        + " start the installed redis-server" + (installed ? " (found on the PATH)"
        : " (not installed: apt-get install -y redis-server)");
  }

  private static String moduleMissing(String className, String module) {
    try {
      FactoryBackend.factoryClass(className);
      return null;
    } catch (ClassNotFoundException | LinkageError e) {
      return module + " is not on the harness's class path: add <dependency><groupId>dev.leases"
          + "</groupId><artifactId>" + module + "</artifactId></dependency> to benchmarks/pom.xml"
          + " and rebuild (scripts/bench.sh rebuilds when sources change)";
    }
  }

  private static String etcdMissing(BenchOptions o) {
    String module = moduleMissing(ETCD_FACTORY, "lease-etcd");
    if (module != null || given(o.etcdEndpoints)) {
      return module;
    }
    boolean installed = LocalProcessServer.findBinary("etcd").isPresent();
    if (o.startLocal && installed) {
      return null;
    }
    return "set LEASES_ETCD_ENDPOINTS=http://127.0.0.1:2379 (or --etcd-endpoints), or add"
        + " --start-local to start the installed etcd" + (installed ? " (found on the PATH)"
        : " (not installed: apt-get install -y etcd-server)");
  }

  private static Backend startEtcd(BenchOptions o) throws Exception {
    LocalProcessServer local = null;
    String endpoints = o.etcdEndpoints;
    if (!given(endpoints)) {
      local = LocalServers.startEtcd();
      endpoints = local.endpoint();
    }
    String first = endpoints.split(",")[0].trim();
    return new FactoryBackend("etcd", "etcd at " + endpoints + (local != null
        ? " (local etcd started for this run)" : ""), FactoryBackend.factoryClass(ETCD_FACTORY),
        Map.of("endpoints", endpoints), () -> FactoryBackend.etcdPut(first, "leases-bench/plain/"),
        local);
  }

  private static String consulMissing(BenchOptions o) {
    String module = moduleMissing(CONSUL_FACTORY, "lease-consul");
    if (module != null || given(o.consulUrl)) {
      return module;
    }
    boolean installed = LocalServers.consulBinary().isPresent();
    if (o.startLocal && installed) {
      return null;
    }
    return "set LEASES_CONSUL_URL=http://127.0.0.1:8500 (or --consul-url) to a Consul agent with a"
        + " low session_ttl_min, or add --start-local to start a local dev agent"
        + (installed ? " (consul found)" : " (not installed: scripts/install-consul.sh builds it"
        + " from its Go module)");
  }

  private static Backend startConsul(BenchOptions o) throws Exception {
    LocalProcessServer local = null;
    String url = o.consulUrl;
    if (!given(url)) {
      local = LocalServers.startConsul();
      url = local.endpoint();
    }
    String at = url;
    return new FactoryBackend("consul", "Consul at " + url + (local != null
        ? " (local dev agent started for this run, session_ttl_min 1s)" : ""),
        FactoryBackend.factoryClass(CONSUL_FACTORY), Map.of("url", url),
        () -> FactoryBackend.consulPut(at, "leases-bench/plain/"), local);
  }

  private static String customMissing(BenchOptions o) {
    if (!given(o.customFactory)) {
      return "pass --custom-factory com.example.MyLeaseStoreFactory (and --custom-setting KEY=VALUE"
          + " for each setting), with your jar on the class path: java -cp"
          + " leases-benchmarks.jar:my-store.jar dev.leases.benchmarks.Main bench --backends custom";
    }
    try {
      FactoryBackend.factoryClass(o.customFactory);
      return null;
    } catch (ClassNotFoundException | LinkageError | IllegalArgumentException e) {
      return "cannot load --custom-factory " + o.customFactory + " (" + e + "): put its jar on the"
          + " class path (java -cp leases-benchmarks.jar:my-store.jar dev.leases.benchmarks.Main"
          + " bench ...)";
    }
  }
}
