package dev.leases.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leases.tck.process.ChildArgs;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockingTaskExecutor;
import net.javacrumbs.shedlock.provider.jdbctemplate.JdbcTemplateLockProvider;
import net.javacrumbs.shedlock.support.KeepAliveLockProvider;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.springframework.context.support.GenericApplicationContext;
import org.springframework.integration.jdbc.lock.DefaultLockRepository;
import org.springframework.integration.jdbc.lock.JdbcLockRegistry;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * The worker side of {@link PeerMechanism}: the {@code --peer=ID} mode of
 * {@link FailoverWorkerMain}, same arguments, same stdin/stdout protocol ({@code READY},
 * {@code ACQUIRED 0}, {@code LOST 0 REASON} when the library says so, {@code CLOSED}), same unit of
 * work — write, sleep {@code --work-ms}, write — against the harness's resource, with no token
 * (the writes carry 0; the resource is {@linkplain FenceServer#unfenced unfenced}).
 *
 * <p>Each mechanism is set up the way its documentation shows, with the lease's TTL where the
 * library has one, and nothing added: the worker writes whenever the library says it leads.
 */
final class PeerWorker {

  private PeerWorker() {}

  /** How long a ShedLock follower waits between attempts to run the task (a scheduler's period). */
  static final Duration SHEDLOCK_POLL = Duration.ofMillis(100);

  private static volatile boolean stopping;

  /** One running mechanism: its work runs on threads it started; close stops and releases. */
  private interface Running extends AutoCloseable {
    @Override
    void close() throws Exception;
  }

  static void run(ChildArgs args) throws Exception {
    PeerMechanism m = PeerMechanism.find(args.require("peer")).orElseThrow(
        () -> new IllegalArgumentException("--peer: unknown " + args.require("peer")));
    String worker = args.require("worker");
    String name = args.require("name");
    Duration ttl = Duration.ofMillis(args.requireLong("ttl-ms"));
    long workMs = args.longOr("work-ms", 20);
    String endpoint = PeerMechanism.endpoint(args.recipe());
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    FailoverWorkerMain.Fence fence = new FailoverWorkerMain.Fence(
        (int) args.requireLong("fence-port"), worker);
    Unit unit = () -> {
      if (fence.write(0, true, out) && !stopping) {
        Thread.sleep(workMs);
        if (!stopping) {
          fence.write(0, false, out);
        }
      }
    };
    Running running = switch (m) {
      case SPRING_INTEGRATION_JDBC -> springIntegration(endpoint, name, ttl, unit, out);
      case REDISSON -> redisson(endpoint, name, ttl, unit, out);
      case SHEDLOCK_JDBC -> shedlock(endpoint, name, ttl, unit, out);
    };
    out.println("READY");
    FailoverWorkerMain.awaitClose(out);
    stopping = true;
    running.close();
    out.println("CLOSED");
    System.exit(0);
  }

  /** One unit of work: write, sleep, write (the second write only if the first was accepted). */
  private interface Unit {
    void run() throws IOException, InterruptedException;
  }

  /** Runs units while {@code leads} says so, until stopping; I/O errors are printed and waited out. */
  private static Thread workLoop(java.util.function.BooleanSupplier leads, Unit unit, long idleMs,
      PrintStream out) {
    Thread t = new Thread(() -> {
      while (!stopping) {
        try {
          if (leads.getAsBoolean()) {
            unit.run();
          } else {
            Thread.sleep(idleMs);
          }
        } catch (InterruptedException e) {
          return;
        } catch (IOException e) {
          out.println("ERROR fence " + e);
        }
      }
    }, "work");
    t.setDaemon(true);
    t.start();
    return t;
  }

  /**
   * The body of a lock-holding section: says ACQUIRED, then runs units until shutdown — the
   * library has no way to tell this code that the lock was lost. An I/O error ends the section.
   */
  private static void leadUntilStopped(Unit unit, PrintStream out) {
    out.println("ACQUIRED 0");
    try {
      while (!stopping) {
        unit.run();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (IOException e) {
      out.println("ERROR fence " + e);
    }
  }

  private static HikariDataSource pool(String jdbcUrl, String poolName) {
    HikariConfig c = new HikariConfig();
    c.setJdbcUrl(jdbcUrl);
    c.setMaximumPoolSize(4);
    c.setPoolName(poolName);
    return new HikariDataSource(c);
  }

  /**
   * Spring Integration as its reference guide configures leader election over JDBC: beans for the
   * {@code DataSource}, a transaction manager, {@code DefaultLockRepository},
   * {@code JdbcLockRegistry} with the TTL, and a {@code LockRegistryLeaderInitiator} whose candidate
   * marks itself leader in {@code onGranted} and not in {@code onRevoked}; the worker writes while
   * it is marked. Default heart-beat (500 ms) and busy-wait (50 ms).
   */
  private static Running springIntegration(String jdbcUrl, String name, Duration ttl, Unit unit,
      PrintStream out) {
    GenericApplicationContext ctx = new GenericApplicationContext();
    ctx.registerBean("dataSource", HikariDataSource.class, () -> pool(jdbcUrl, "si-lock"));
    ctx.registerBean(PlatformTransactionManager.class,
        () -> new DataSourceTransactionManager(ctx.getBean(HikariDataSource.class)));
    ctx.registerBean(DefaultLockRepository.class,
        () -> new DefaultLockRepository(ctx.getBean(HikariDataSource.class)));
    ctx.registerBean(JdbcLockRegistry.class,
        () -> new JdbcLockRegistry(ctx.getBean(DefaultLockRepository.class), ttl));
    LeaderCandidate candidate = new LeaderCandidate(name, out);
    ctx.registerBean(LockRegistryLeaderInitiator.class,
        () -> new LockRegistryLeaderInitiator(ctx.getBean(JdbcLockRegistry.class), candidate));
    ctx.refresh();
    Thread work = workLoop(() -> candidate.leading, unit, 5, out);
    return () -> {
      ctx.close(); // stops the initiator: unlocks, onRevoked
      work.join(2000);
    };
  }

  /** The candidate of Spring Integration's documentation: a flag set between granted and revoked. */
  private static final class LeaderCandidate extends DefaultCandidate {
    private final PrintStream out;
    volatile boolean leading;

    LeaderCandidate(String role, PrintStream out) {
      super(UUID.randomUUID().toString(), role);
      this.out = out;
    }

    @Override
    public void onGranted(Context ctx) {
      leading = true;
      out.println("ACQUIRED 0");
    }

    @Override
    public void onRevoked(Context ctx) {
      leading = false;
      out.println("LOST 0 REVOKED");
    }
  }

  /**
   * Redisson as its documentation shows a lock: {@code lock()} with no lease time, so the watchdog
   * keeps extending it by {@code lockWatchdogTimeout} (set to the TTL) every third of it while the
   * process lives; work inside {@code try}, {@code unlock()} in {@code finally}.
   */
  private static Running redisson(String uri, String name, Duration ttl, Unit unit,
      PrintStream out) {
    Config config = new Config();
    config.useSingleServer().setAddress(uri);
    config.setLockWatchdogTimeout(ttl.toMillis());
    RedissonClient client = Redisson.create(config);
    Thread t = new Thread(() -> {
      RLock lock = client.getLock(name);
      try {
        lock.lockInterruptibly();
      } catch (InterruptedException e) {
        return;
      }
      try {
        leadUntilStopped(unit, out);
      } finally {
        try {
          lock.unlock();
        } catch (RuntimeException e) {
          out.println("LOST 0 UNLOCK_FAILED " + e.getClass().getSimpleName());
        }
      }
    }, "work");
    t.setDaemon(true);
    t.start();
    return () -> {
      if (!t.isAlive()) {
        client.shutdown();
        return;
      }
      t.join(2000); // the holder's loop ends and unlocks; a follower waits in lock()
      if (t.isAlive()) {
        t.interrupt();
        t.join(2000);
      }
      client.shutdown();
    };
  }

  /**
   * ShedLock as its documentation shows keep-alive: {@code KeepAliveLockProvider} around the JDBC
   * provider (database time), and a task run through {@code LockingTaskExecutor} with
   * lockAtMostFor = TTL, lockAtLeastFor = 0; a follower retries every {@link #SHEDLOCK_POLL}, as a
   * scheduled task would. While the task runs the keep-alive extends the lock every half TTL.
   */
  private static Running shedlock(String jdbcUrl, String name, Duration ttl, Unit unit,
      PrintStream out) {
    HikariDataSource ds = pool(jdbcUrl, "shedlock");
    ScheduledExecutorService keepAlive = Executors.newSingleThreadScheduledExecutor();
    LockingTaskExecutor executor = new DefaultLockingTaskExecutor(new KeepAliveLockProvider(
        new JdbcTemplateLockProvider(JdbcTemplateLockProvider.Configuration.builder()
            .withJdbcTemplate(new JdbcTemplate(ds)).usingDbTime().build()), keepAlive));
    Thread t = new Thread(() -> {
      while (!stopping) {
        try {
          executor.executeWithLock((Runnable) () -> leadUntilStopped(unit, out),
              new LockConfiguration(Instant.now(), name, ttl, Duration.ZERO));
          Thread.sleep(SHEDLOCK_POLL.toMillis());
        } catch (InterruptedException e) {
          return;
        } catch (RuntimeException e) {
          out.println("ERROR shedlock " + e);
        }
      }
    }, "work");
    t.setDaemon(true);
    t.start();
    return () -> {
      t.join(2000);
      keepAlive.shutdownNow();
      ds.close();
    };
  }
}
