package dev.leases.spring.autoconfigure;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Settings under {@code leases.*}. Values are checked when the beans that use them are built (the
 * library's own validation), and a bad one fails the context with a message naming the property.
 */
@ConfigurationProperties("leases")
public class LeasesProperties {

  /** The defaults. */
  public LeasesProperties() {}

  /** Which backend to use when several apply; by default the first that applies in this order. */
  private @Nullable Backend backend;

  /**
   * TTL of leader leases and job leases unless set per leader or per {@code @RunOnce}. A process
   * that dies blocks its lease for up to this long; renewals run every ttl/3.
   */
  private Duration defaultTtl = Duration.ofSeconds(30);

  /**
   * Longest wait for one call to the lease store (and the ledger's own statements); default the
   * backend's own (PostgreSQL 5 s, Redis 2 s, etcd 5 s, Consul 2 s).
   */
  private @Nullable Duration callTimeout;

  /** PostgreSQL settings ({@code leases.postgres.*}). */
  private final Postgres postgres = new Postgres();
  /** Redis settings ({@code leases.redis.*}). */
  private final Redis redis = new Redis();
  /** etcd settings ({@code leases.etcd.*}). */
  private final Etcd etcd = new Etcd();
  /** Consul settings ({@code leases.consul.*}). */
  private final Consul consul = new Consul();
  /** {@code @RunOnce} settings ({@code leases.once.*}). */
  private final Once once = new Once();

  /** Leader loops started with the context, by lease name. */
  private final Map<String, Leader> leaders = new LinkedHashMap<>();

  public @Nullable Backend getBackend() {
    return backend;
  }

  public void setBackend(@Nullable Backend backend) {
    this.backend = backend;
  }

  public Duration getDefaultTtl() {
    return defaultTtl;
  }

  public void setDefaultTtl(Duration defaultTtl) {
    this.defaultTtl = defaultTtl;
  }

  public @Nullable Duration getCallTimeout() {
    return callTimeout;
  }

  public void setCallTimeout(@Nullable Duration callTimeout) {
    this.callTimeout = callTimeout;
  }

  public Postgres getPostgres() {
    return postgres;
  }

  public Redis getRedis() {
    return redis;
  }

  public Etcd getEtcd() {
    return etcd;
  }

  public Consul getConsul() {
    return consul;
  }

  public Once getOnce() {
    return once;
  }

  public Map<String, Leader> getLeaders() {
    return leaders;
  }

  /** The lease backends, in the order they are tried when {@code leases.backend} is not set. */
  public enum Backend {
    /** {@code lease-postgres} on the application's DataSource. */
    POSTGRES,
    /** {@code lease-redis} on a Lettuce RedisClient, a LettuceConnectionFactory or leases.redis.uri. */
    REDIS,
    /** {@code lease-etcd} on leases.etcd.endpoints. */
    ETCD,
    /** {@code lease-consul} on leases.consul.url. */
    CONSUL
  }

  /** PostgreSQL backend settings. */
  public static class Postgres {
    /** The defaults. */
    public Postgres() {}

    /** Lease table (a lower-case identifier, optionally schema-qualified). */
    private String table = "leases";
    /** Fence table of JdbcFence and of the run ledger's job fences. */
    private String fenceTable = "lease_fences";
    /** Run ledger's attempts table. */
    private String runTable = "lease_runs";
    /** Whether missing tables are created on first use. */
    private boolean createTables = true;

    public String getTable() {
      return table;
    }

    public void setTable(String table) {
      this.table = table;
    }

    public String getFenceTable() {
      return fenceTable;
    }

    public void setFenceTable(String fenceTable) {
      this.fenceTable = fenceTable;
    }

    public String getRunTable() {
      return runTable;
    }

    public void setRunTable(String runTable) {
      this.runTable = runTable;
    }

    public boolean isCreateTables() {
      return createTables;
    }

    public void setCreateTables(boolean createTables) {
      this.createTables = createTables;
    }
  }

  /** Redis backend settings. */
  public static class Redis {
    /** The defaults. */
    public Redis() {}

    /**
     * Server URI ({@code redis://host:port}); needed with a plain Lettuce RedisClient bean, else
     * taken from the LettuceConnectionFactory's standalone configuration.
     */
    private @Nullable String uri;
    /** Prefix of every key the store writes. */
    private String keyPrefix = "leases";

    public @Nullable String getUri() {
      return uri;
    }

    public void setUri(@Nullable String uri) {
      this.uri = uri;
    }

    public String getKeyPrefix() {
      return keyPrefix;
    }

    public void setKeyPrefix(String keyPrefix) {
      this.keyPrefix = keyPrefix;
    }
  }

  /** etcd backend settings. */
  public static class Etcd {
    /** The defaults. */
    public Etcd() {}

    /** Client endpoints, e.g. {@code http://127.0.0.1:2379}; setting them enables the backend. */
    private List<String> endpoints = new ArrayList<>();
    /** Prefix of every key the store writes. */
    private String keyPrefix = "leases";

    public List<String> getEndpoints() {
      return endpoints;
    }

    public void setEndpoints(List<String> endpoints) {
      this.endpoints = endpoints;
    }

    public String getKeyPrefix() {
      return keyPrefix;
    }

    public void setKeyPrefix(String keyPrefix) {
      this.keyPrefix = keyPrefix;
    }
  }

  /** Consul backend settings. */
  public static class Consul {
    /** The defaults. */
    public Consul() {}

    /** Agent URL, e.g. {@code http://127.0.0.1:8500}; setting it enables the backend. */
    private @Nullable String url;
    /** Prefix of every key the store writes. */
    private String keyPrefix = "leases";
    /** ACL token sent with every request. */
    private @Nullable String aclToken;

    public @Nullable String getUrl() {
      return url;
    }

    public void setUrl(@Nullable String url) {
      this.url = url;
    }

    public String getKeyPrefix() {
      return keyPrefix;
    }

    public void setKeyPrefix(String keyPrefix) {
      this.keyPrefix = keyPrefix;
    }

    public @Nullable String getAclToken() {
      return aclToken;
    }

    public void setAclToken(@Nullable String aclToken) {
      this.aclToken = aclToken;
    }
  }

  /** {@code @RunOnce} settings. */
  public static class Once {
    /** The defaults. */
    public Once() {}

    /** Job lease TTL unless the annotation sets one; default leases.default-ttl. */
    private @Nullable Duration ttl;

    public @Nullable Duration getTtl() {
      return ttl;
    }

    public void setTtl(@Nullable Duration ttl) {
      this.ttl = ttl;
    }
  }

  /** One leader loop. */
  public static class Leader {
    /** The defaults. */
    public Leader() {}

    /** Lease TTL; default leases.default-ttl. */
    private @Nullable Duration ttl;
    /** How often the leader renews; default ttl/3, at most ttl/3. */
    private @Nullable Duration renewInterval;
    /** How long before the promised expiry the leader stands down; default ttl/10. */
    private @Nullable Duration standDownMargin;

    public @Nullable Duration getTtl() {
      return ttl;
    }

    public void setTtl(@Nullable Duration ttl) {
      this.ttl = ttl;
    }

    public @Nullable Duration getRenewInterval() {
      return renewInterval;
    }

    public void setRenewInterval(@Nullable Duration renewInterval) {
      this.renewInterval = renewInterval;
    }

    public @Nullable Duration getStandDownMargin() {
      return standDownMargin;
    }

    public void setStandDownMargin(@Nullable Duration standDownMargin) {
      this.standDownMargin = standDownMargin;
    }
  }
}
