package dev.leases.etcd;

import dev.leases.tck.servers.FreePorts;
import dev.leases.tck.servers.LocalProcessServer;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.maintenance.StatusResponse;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * A real multi-member etcd cluster on loopback for fault tests: one {@code etcd} process per member,
 * each with its own data directory and client/peer ports. Members can be killed ({@code SIGKILL}),
 * stopped ({@code SIGSTOP}) and continued ({@code SIGCONT}). Needs the local {@code etcd} binary.
 */
final class EtcdCluster implements AutoCloseable {

  /** One member. */
  static final class Member {
    final String name;
    final int clientPort;
    final int peerPort;
    final Path dataDir;
    Process process;

    Member(String name, int clientPort, int peerPort, Path dataDir) {
      this.name = name;
      this.clientPort = clientPort;
      this.peerPort = peerPort;
      this.dataDir = dataDir;
    }

    String endpoint() {
      return "http://127.0.0.1:" + clientPort;
    }

    @Override
    public String toString() {
      return name + "@" + clientPort + (process != null ? " pid " + process.pid() : "");
    }
  }

  private final Path root;
  private final List<Member> members;
  private final Client admin;

  private EtcdCluster(Path root, List<Member> members) {
    this.root = root;
    this.members = members;
    this.admin = Client.builder().endpoints(endpoints().toArray(String[]::new)).build();
  }

  /** Starts {@code size} members and waits until every one reports a healthy cluster. */
  static EtcdCluster start(int size, int heartbeatMs, int electionMs) throws Exception {
    Path binary = LocalProcessServer.findBinary("etcd").orElseThrow(
        () -> new IllegalStateException("the cluster tests need a local etcd binary. "
            + EtcdServers.INSTALL_HINT));
    Path root = Files.createTempDirectory("leases-etcd-cluster-");
    List<Member> members = new ArrayList<>();
    for (int i = 0; i < size; i++) {
      members.add(new Member("m" + i, FreePorts.pick(), FreePorts.pick(), root.resolve("m" + i)));
    }
    String initial = members.stream()
        .map(m -> m.name + "=http://127.0.0.1:" + m.peerPort).collect(Collectors.joining(","));
    String token = root.getFileName().toString();
    EtcdCluster cluster = new EtcdCluster(root, members);
    try {
      for (Member m : members) {
        Files.createDirectories(m.dataDir);
        m.process = new ProcessBuilder(EtcdServers.argv(binary, m.name, m.dataDir.resolve("data"),
            m.clientPort, m.peerPort, initial, token, heartbeatMs, electionMs))
            .redirectErrorStream(true)
            .redirectOutput(m.dataDir.resolve("etcd.log").toFile())
            .start();
      }
      for (Member m : members) {
        EtcdServers.awaitHealthy(m.clientPort, Duration.ofSeconds(60));
      }
    } catch (Exception e) {
      String logs = cluster.logs();
      cluster.close();
      throw new IOException("the etcd cluster did not come up: " + e + "\n" + logs, e);
    }
    return cluster;
  }

  List<Member> members() {
    return members;
  }

  List<String> endpoints() {
    return members.stream().map(Member::endpoint).toList();
  }

  /** The member that is Raft leader now, asked of the members that answer; empty if none knows. */
  Optional<Member> leader() {
    for (Member m : members) {
      if (m.process == null || !m.process.isAlive()) {
        continue;
      }
      try {
        StatusResponse s = admin.getMaintenanceClient().statusMember(m.endpoint())
            .get(2, TimeUnit.SECONDS);
        if (s.getLeader() != 0 && s.getLeader() == s.getHeader().getMemberId()) {
          return Optional.of(m);
        }
      } catch (Exception e) {
        // this member does not answer; ask the next
      }
    }
    return Optional.empty();
  }

  /** SIGKILL. */
  void kill(Member m) throws InterruptedException {
    m.process.destroyForcibly();
    m.process.waitFor(10, TimeUnit.SECONDS);
  }

  /** SIGSTOP: the member stops answering, its connections stay open. */
  void stop(Member m) throws IOException, InterruptedException {
    signal(m, "STOP");
  }

  /** SIGCONT. */
  void resume(Member m) throws IOException, InterruptedException {
    signal(m, "CONT");
  }

  private static void signal(Member m, String signal) throws IOException, InterruptedException {
    Process p = new ProcessBuilder("kill", "-" + signal, Long.toString(m.process.pid()))
        .redirectErrorStream(true).start();
    if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IOException("kill -" + signal + " " + m.process.pid() + " failed");
    }
  }

  /** The tail of every member's log, for failure messages. */
  String logs() {
    StringBuilder sb = new StringBuilder();
    for (Member m : members) {
      Path log = m.dataDir.resolve("etcd.log");
      try {
        String s = Files.exists(log) ? Files.readString(log) : "";
        sb.append("--- ").append(m).append('\n')
            .append(s.length() > 3000 ? s.substring(s.length() - 3000) : s).append('\n');
      } catch (IOException e) {
        sb.append("--- ").append(m).append(": ").append(e).append('\n');
      }
    }
    return sb.toString();
  }

  @Override
  public void close() {
    admin.close();
    for (Member m : members) {
      if (m.process != null && m.process.isAlive()) {
        try {
          resume(m);
        } catch (Exception e) {
          // killing it anyway
        }
        m.process.destroyForcibly();
        try {
          m.process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
    try (Stream<Path> walk = Files.walk(root)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // best effort
    }
  }
}
