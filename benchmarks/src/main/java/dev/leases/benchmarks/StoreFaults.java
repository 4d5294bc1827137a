package dev.leases.benchmarks;

import dev.leases.tck.servers.FreePorts;
import dev.leases.tck.servers.LocalProcessServer;
import dev.leases.tck.servers.LocalServers;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The store faults the nemesis injects per backend, where the harness controls the server:
 * Redis started with {@code --start-local} is killed and restarted empty (no persistence) on the
 * same port; a loopback PostgreSQL gets a crash restart (one server process killed with SIGKILL, so
 * the postmaster ends every session and runs crash recovery). None for the in-memory store, etcd
 * and Consul (not implemented yet), nor for external servers.
 */
final class StoreFaults {

  private StoreFaults() {}

  /** The backend's store fault, or null if there is none. */
  static NemesisRun.StoreFault of(Backend backend) {
    if (backend instanceof RedisBackend r && r.local() != null) {
      return new RedisRestart(r.local());
    }
    if (backend instanceof PostgresBackend p && (p.url().contains("//127.0.0.1:")
        || p.url().contains("//localhost:"))) {
      return new PostgresCrash(p.url());
    }
    return null;
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

  /** SIGKILL of redis-server, then a fresh empty one on the same port. */
  private static final class RedisRestart implements NemesisRun.StoreFault {
    private final LocalProcessServer original;
    private final Path binary;
    private Process current;

    RedisRestart(LocalProcessServer original) {
      this.original = original;
      this.binary = LocalProcessServer.findBinary("redis-server").orElseThrow();
    }

    @Override
    public String describe() {
      return "redis-server SIGKILL and restart on the same port without persistence";
    }

    @Override
    public void inject(long downtimeMs) throws Exception {
      if (current == null) {
        kill(original.pid());
      } else {
        current.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
      Thread.sleep(downtimeMs);
      int port = original.port();
      current = new ProcessBuilder(LocalServers.redisArgv(binary, port, original.dataDir()))
          .redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(original.dataDir()
              .resolve("server.log").toFile()))
          .start();
      if (!FreePorts.awaitListening(port, Duration.ofSeconds(30))) {
        throw new IOException("redis-server did not listen on port " + port + " again within"
            + " 30 s of its restart; log " + original.dataDir().resolve("server.log"));
      }
    }

    @Override
    public void close() {
      if (current != null) {
        current.destroyForcibly();
        try {
          current.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  /** SIGKILL of one PostgreSQL server process: the postmaster restarts every session. */
  private static final class PostgresCrash implements NemesisRun.StoreFault {
    private final String url;

    PostgresCrash(String url) {
      this.url = url;
    }

    @Override
    public String describe() {
      return "PostgreSQL crash restart (SIGKILL of a server process: the postmaster ends every"
          + " session and runs crash recovery)";
    }

    @Override
    public void inject(long downtimeMs) throws Exception {
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
          return;
        } catch (java.sql.SQLException e) {
          if (System.nanoTime() > end) {
            throw new IOException("PostgreSQL did not accept connections within 60 s of the"
                + " crash: " + e, e);
          }
        }
      }
    }

    @Override
    public void close() {}
  }
}
