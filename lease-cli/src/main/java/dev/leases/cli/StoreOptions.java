package dev.leases.cli;

import dev.leases.LeaseStore;
import dev.leases.consul.ConsulLeaseStore;
import dev.leases.etcd.EtcdLeaseStore;
import dev.leases.postgres.PostgresLeaseStore;
import dev.leases.redis.RedisLeaseStore;
import io.lettuce.core.RedisCredentials;
import io.lettuce.core.RedisCredentialsProvider;
import io.lettuce.core.RedisURI;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.postgresql.ds.PGSimpleDataSource;
import picocli.CommandLine.Option;

/**
 * The options every command shares: which store, where it is, and how long a call may take.
 * Secrets come from {@code --password-file} or {@code $LEASES_PASSWORD}, never from the command
 * line (where {@code ps} shows them), and are never printed.
 */
final class StoreOptions {

  /** The stores the CLI opens. */
  enum Backend { postgres, redis, etcd, consul }

  static final long DEFAULT_TIMEOUT_MILLIS = 5000;

  @Option(names = "--store", required = true, paramLabel = "STORE",
      description = "The store: ${COMPLETION-CANDIDATES}.")
  Backend backend;

  @Option(names = "--url", paramLabel = "URL", description = {
      "postgres: a JDBC URL, e.g. jdbc:postgresql://db:5432/app;",
      "redis: a Redis URI, e.g. redis://cache:6379/0;",
      "consul: the agent's HTTP address, e.g. http://127.0.0.1:8500."})
  @Nullable String url;

  @Option(names = "--endpoints", paramLabel = "URLS",
      description = "etcd: comma-separated endpoints, e.g. http://127.0.0.1:2379.")
  @Nullable String endpoints;

  @Option(names = "--user", paramLabel = "USER", description = "postgres, redis: the user name.")
  @Nullable String user;

  @Option(names = "--password-file", paramLabel = "FILE", description = {
      "A file whose first line is the secret (postgres, redis: the password; consul: the ACL"
          + " token). Default: $" + Secrets.ENV_VAR + "."})
  @Nullable Path passwordFile;

  @Option(names = "--table", paramLabel = "TABLE",
      description = "postgres: the lease table (default " + PostgresLeaseStore.DEFAULT_TABLE + ").")
  @Nullable String table;

  @Option(names = "--key-prefix", paramLabel = "PREFIX",
      description = "redis, etcd, consul: the key prefix the applications use.")
  @Nullable String keyPrefix;

  @Option(names = "--timeout", paramLabel = "MILLIS", defaultValue = "" + DEFAULT_TIMEOUT_MILLIS,
      description = "The bound on each call to the store, in ms (default ${DEFAULT-VALUE}).")
  long timeoutMillis;

  /** What {@link #open} returns: the store and how to name it. */
  record Opened(LeaseStore store, String description, Secrets secrets)
      implements AutoCloseable {
    @Override
    public void close() {
      store.close();
    }
  }

  /**
   * Opens the store these options describe. Nothing is sent yet: an unreachable store shows at the
   * first call, as {@link dev.leases.LeaseStoreUnavailableException}.
   *
   * @throws CliException ({@link ExitCodes#USAGE}) for an option that is missing, does not apply
   *     to the store, or is malformed
   */
  Opened open(Map<String, String> env) {
    if (timeoutMillis <= 0) {
      throw usage("--timeout must be a positive number of milliseconds, got " + timeoutMillis);
    }
    Duration timeout = Duration.ofMillis(timeoutMillis);
    Secrets secrets = Secrets.from(passwordFile, env);
    refuseOptions();
    try {
      return switch (backend) {
        case postgres -> openPostgres(timeout, secrets);
        case redis -> {
          RedisURI uri = RedisURI.create(required(url, "--url", "redis://127.0.0.1:6379"));
          if (user != null || secrets.value() != null) {
            String password = secrets.value();
            RedisCredentials credentials = RedisCredentials.just(user, password);
            uri.setCredentialsProvider(RedisCredentialsProvider.from(() -> credentials));
          }
          RedisLeaseStore.Builder b = RedisLeaseStore.builder(uri).commandTimeout(timeout);
          if (keyPrefix != null) {
            b.keyPrefix(keyPrefix);
          }
          yield new Opened(b.build(), "redis at " + secrets.redact(url), secrets);
        }
        case etcd -> {
          String[] list = required(endpoints, "--endpoints", "http://127.0.0.1:2379").split(",");
          EtcdLeaseStore.Builder b = EtcdLeaseStore.builder(list).callTimeout(timeout);
          if (keyPrefix != null) {
            b.keyPrefix(keyPrefix);
          }
          yield new Opened(b.build(), "etcd at " + endpoints, secrets);
        }
        case consul -> {
          ConsulLeaseStore.Builder b = ConsulLeaseStore.builder(
              required(url, "--url", "http://127.0.0.1:8500")).callTimeout(timeout);
          if (keyPrefix != null) {
            b.keyPrefix(keyPrefix);
          }
          if (secrets.value() != null) {
            b.aclToken(secrets.value());
          }
          yield new Opened(b.build(), "consul at " + secrets.redact(url), secrets);
        }
      };
    } catch (IllegalArgumentException e) {
      throw usage(secrets.redact(e.getMessage()));
    }
  }

  /**
   * PostgreSQL without a pool: a one-shot command needs a connection or two, and a pool would make a
   * refused connection wait out its whole connection timeout instead of failing at once. The table
   * is never created here (an operator's typo must not add tables to a database).
   */
  private Opened openPostgres(Duration timeout, Secrets secrets) {
    String jdbcUrl = required(url, "--url", "jdbc:postgresql://127.0.0.1:5432/postgres");
    String t = table != null ? table : PostgresLeaseStore.DEFAULT_TABLE;
    PGSimpleDataSource ds = new PGSimpleDataSource();
    try {
      ds.setUrl(jdbcUrl);
    } catch (IllegalArgumentException e) {
      throw usage("--url is not a PostgreSQL JDBC URL (jdbc:postgresql://host:port/database): "
          + secrets.redact(e.getMessage()));
    }
    if (user != null) {
      ds.setUser(user);
    }
    if (secrets.value() != null) {
      ds.setPassword(secrets.value());
    }
    int seconds = (int) Math.max(1, (timeout.toMillis() + 999) / 1000);
    ds.setConnectTimeout(seconds);
    ds.setLoginTimeout(seconds);
    ds.setSocketTimeout(seconds + 1);
    ds.setTcpKeepAlive(true);
    ds.setApplicationName("leases-cli");
    LeaseStore store = PostgresLeaseStore.builder(ds).table(t).callTimeout(timeout)
        .createTable(false).listenConnection(() -> {
          try {
            return ds.getConnection();
          } catch (SQLException e) {
            throw new IllegalStateException("cannot open the LISTEN connection (SQLState "
                + e.getSQLState() + "): " + e.getMessage(), e);
          }
        }).build();
    return new Opened(store, "postgres at " + secrets.redact(jdbcUrl) + " (table " + t + ")",
        secrets);
  }

  /** Refuses options that mean nothing for the chosen store, so a mistake is not ignored. */
  private void refuseOptions() {
    List<String> wrong = new ArrayList<>();
    if (url != null && backend == Backend.etcd) {
      wrong.add("--url (etcd takes --endpoints)");
    }
    if (endpoints != null && backend != Backend.etcd) {
      wrong.add("--endpoints (only etcd; use --url)");
    }
    if (table != null && backend != Backend.postgres) {
      wrong.add("--table (only postgres)");
    }
    if (keyPrefix != null && backend == Backend.postgres) {
      wrong.add("--key-prefix (postgres takes --table)");
    }
    if (user != null && (backend == Backend.etcd || backend == Backend.consul)) {
      wrong.add("--user (only postgres and redis)");
    }
    if (passwordFile != null && backend == Backend.etcd) {
      wrong.add("--password-file (the CLI opens etcd without authentication)");
    }
    if (!wrong.isEmpty()) {
      throw usage("these options do not apply to --store " + backend + ": "
          + String.join(", ", wrong));
    }
  }

  private String required(@Nullable String value, String option, String example) {
    if (value == null || value.isBlank()) {
      throw usage("--store " + backend + " needs " + option + ", e.g. " + option + " " + example);
    }
    return value;
  }

  private static CliException usage(@Nullable String message) {
    return new CliException(ExitCodes.USAGE, message);
  }
}
