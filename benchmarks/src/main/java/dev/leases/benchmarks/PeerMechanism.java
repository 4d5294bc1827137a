package dev.leases.benchmarks;

import dev.leases.postgres.PostgresLeaseStoreFactory;
import dev.leases.redis.RedisLeaseStoreFactory;
import dev.leases.tck.process.StoreRecipe;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.support.KeepAliveLockProvider;

/**
 * A leader mechanism of another library that {@code bench --peers} runs beside ours, on the same
 * store, with the same TTL, worker JVMs and fault schedule ({@link Failover}), written the way its
 * documentation shows (the worker side is {@link PeerWorker}). None has a fencing token, so their
 * writes go to an {@linkplain FenceServer#unfenced unfenced} resource and every write the resumed
 * paused leader makes after its successor's first write counts as a stale write accepted.
 *
 * <p>The harness side is here: which backend a mechanism needs, its library version (the one this
 * jar was built with), the TTL it accepts, and the tables it needs, created from the library's own
 * DDL before any worker starts.
 */
enum PeerMechanism {

  /** {@code LockRegistryLeaderInitiator} over {@code JdbcLockRegistry} + {@code DefaultLockRepository}. */
  SPRING_INTEGRATION_JDBC("spring-integration-jdbc", "postgres",
      "org.springframework.integration:spring-integration-jdbc",
      "LockRegistryLeaderInitiator + JdbcLockRegistry(ttl) + DefaultLockRepository; writes between"
          + " onGranted and onRevoked"),
  /** Redisson's {@code RLock.lock()} (no lease time: the watchdog renews every TTL/3). */
  REDISSON("redisson", "redis", "org.redisson:redisson",
      "RLock.lock() without leaseTime (lockWatchdogTimeout = TTL), writes while holding, unlock()"),
  /** ShedLock's JDBC provider wrapped in {@code KeepAliveLockProvider}. */
  SHEDLOCK_JDBC("shedlock-jdbc", "postgres",
      "net.javacrumbs.shedlock:shedlock-provider-jdbc-template",
      "KeepAliveLockProvider(JdbcTemplateLockProvider, usingDbTime); every 100 ms executeWithLock"
          + " (lockAtMostFor = TTL) of a task that writes until shutdown");

  /** ShedLock's table, as its documentation gives it for PostgreSQL (its jars ship no DDL). */
  static final String SHEDLOCK_DDL = "CREATE TABLE IF NOT EXISTS shedlock (name VARCHAR(64) NOT NULL,"
      + " lock_until TIMESTAMP NOT NULL, locked_at TIMESTAMP NOT NULL,"
      + " locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))";

  /** Spring Integration's DDL for PostgreSQL, in its jar. */
  static final String SPRING_SCHEMA = "/org/springframework/integration/jdbc/schema-postgresql.sql";

  /** What {@link KeepAliveLockProvider}'s public constructor accepts as lockAtMostFor at least. */
  static final Duration SHEDLOCK_KEEP_ALIVE_MIN = Duration.ofSeconds(30);

  /** The TTL a mechanism runs with, and why it differs from the one asked for (or ""). */
  record Ttl(Duration ttl, String note) {}

  private final String id;
  private final String backend;
  private final String artifact;
  private final String how;

  PeerMechanism(String id, String backend, String artifact, String how) {
    this.id = id;
    this.backend = backend;
    this.artifact = artifact;
    this.how = how;
  }

  /** The name {@code --peers} takes. */
  String id() {
    return id;
  }

  /** The {@link Backends} name of the store it runs on. */
  String backend() {
    return backend;
  }

  /** Maven coordinates without the version. */
  String artifact() {
    return artifact;
  }

  /** How the worker uses it, for the report. */
  String how() {
    return how;
  }

  /** The library version this jar was built with. */
  String version() {
    try (InputStream in = PeerMechanism.class.getResourceAsStream("/leases-benchmarks.properties")) {
      Properties p = new Properties();
      if (in != null) {
        p.load(in);
      }
      return p.getProperty("peer." + id + ".version", "unknown");
    } catch (IOException e) {
      return "unknown";
    }
  }

  static Optional<PeerMechanism> find(String id) {
    return Arrays.stream(values()).filter(m -> m.id.equals(id)).findFirst();
  }

  static List<String> ids() {
    return Arrays.stream(values()).map(PeerMechanism::id).toList();
  }

  /** {@code --peers} resolved: "all" is every mechanism; an unknown name is an error. */
  static List<PeerMechanism> parse(List<String> names) {
    List<PeerMechanism> out = new ArrayList<>();
    for (String n : names) {
      List<PeerMechanism> add = n.equals("all") ? List.of(values())
          : List.of(find(n).orElseThrow(() -> new IllegalArgumentException("--peers: unknown '" + n
              + "'; choose from " + ids() + " or all")));
      add.stream().filter(m -> !out.contains(m)).forEach(out::add);
    }
    return out;
  }

  /**
   * The TTL this mechanism runs with when {@code want} is asked for. ShedLock's
   * {@code KeepAliveLockProvider} refuses a lockAtMostFor under 30 s (its lower bound is settable
   * only from its own package): the TTL is raised to it, and the note quotes ShedLock's refusal.
   */
  Ttl fitTtl(Duration want) {
    if (this != SHEDLOCK_JDBC) {
      return new Ttl(want, "");
    }
    ScheduledExecutorService s = Executors.newSingleThreadScheduledExecutor();
    try {
      Optional<SimpleLock> none = Optional.empty();
      new KeepAliveLockProvider(c -> none, s).lock(
          new LockConfiguration(Instant.now(), "probe", want, Duration.ZERO));
      return new Ttl(want, "");
    } catch (IllegalArgumentException refused) {
      Duration ttl = want.compareTo(SHEDLOCK_KEEP_ALIVE_MIN) < 0 ? SHEDLOCK_KEEP_ALIVE_MIN : want;
      return new Ttl(ttl, "ShedLock refuses TTL " + Failover.ms(want.toMillis()) + " with keep-alive"
          + " (\"" + refused.getMessage() + "\"): measured at " + Failover.ms(ttl.toMillis()));
    } finally {
      s.shutdownNow();
    }
  }

  /** The store's address for the worker, from the backend's recipe. */
  static String endpoint(StoreRecipe recipe) {
    String url = recipe.settings().get(PostgresLeaseStoreFactory.JDBC_URL);
    return url != null ? url : recipe.settings().get(RedisLeaseStoreFactory.URI);
  }

  /** Creates the tables the mechanism needs from the library's own DDL, if they are missing. */
  void prepare(StoreRecipe recipe) throws SQLException, IOException {
    if (backend.equals("redis")) {
      return;
    }
    try (Connection c = DriverManager.getConnection(endpoint(recipe));
        Statement s = c.createStatement()) {
      if (this == SHEDLOCK_JDBC) {
        s.execute(SHEDLOCK_DDL);
        return;
      }
      try (ResultSet rs = s.executeQuery("SELECT to_regclass('int_lock') IS NOT NULL")) {
        rs.next();
        if (rs.getBoolean(1)) {
          return;
        }
      }
      s.execute(springLockTableDdl());
    }
  }

  /** The {@code CREATE TABLE INT_LOCK} statement of Spring Integration's PostgreSQL schema. */
  static String springLockTableDdl() throws IOException {
    try (InputStream in = PeerMechanism.class.getResourceAsStream(SPRING_SCHEMA)) {
      if (in == null) {
        throw new IllegalStateException(SPRING_SCHEMA + " is not on the class path: is"
            + " spring-integration-jdbc a dependency of the benchmarks module?");
      }
      String sql = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      Matcher m = Pattern.compile("CREATE TABLE INT_LOCK\\s*\\(.*?\\);", Pattern.DOTALL
          | Pattern.CASE_INSENSITIVE).matcher(sql);
      if (!m.find()) {
        throw new IllegalStateException(SPRING_SCHEMA + " has no CREATE TABLE INT_LOCK statement");
      }
      String ddl = m.group();
      return ddl.substring(0, ddl.length() - 1);
    }
  }
}
