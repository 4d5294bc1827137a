package dev.leases.tck.servers;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * Replicated local servers on loopback for fault injection (the benchmark nemesis): a multi-member
 * etcd cluster, a multi-server Consul cluster, and a Redis primary with one replica behind a
 * {@link TcpProxy} that serves as a movable virtual IP. Every member has fixed ports and its own
 * data directory, so that a member killed with {@code SIGKILL} is started again as the same member
 * from what it had made durable. Command lines come from {@link LocalServers}.
 */
public final class LocalClusters {

  private LocalClusters() {}

  /**
   * One server process with fixed ports and a data directory that outlives it: killed and started
   * again at will. Output is appended to {@code server.log} in the directory.
   */
  public static final class Member {
    private final String name;
    private final int port;
    private final Path dir;
    private volatile List<String> argv;
    private volatile Process process;

    Member(String name, int port, Path dir, List<String> argv) {
      this.name = name;
      this.port = port;
      this.dir = dir;
      this.argv = List.copyOf(argv);
    }

    /** The member's name in its cluster. */
    public String name() {
      return name;
    }

    /** The client port (etcd client URL, Consul HTTP, Redis). */
    public int port() {
      return port;
    }

    /** Its data directory, kept across its restarts. */
    public Path dir() {
      return dir;
    }

    /** Whether its server process is running. */
    public boolean isAlive() {
      Process p = process;
      return p != null && p.isAlive();
    }

    /**
     * Starts it with its last command line; returns once it listens on its port. While it was
     * down its port was free, and another process may have taken it (any {@code bind(0)} on the
     * machine can draw it): this waits up to 10 s for such a holder to let go, then fails; and it
     * fails at once, with the log, when the member exits instead of listening. That something
     * listens on the port proves little by itself: the cluster's readiness check asks the member
     * who it is.
     */
    public synchronized void start() throws IOException, InterruptedException {
      if (isAlive()) {
        throw new IllegalStateException(this + " is running already");
      }
      awaitPortFree(Duration.ofSeconds(10));
      launch();
      long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (!FreePorts.awaitListening(port, Duration.ofMillis(200))) {
        requireAlive("before it listened on port " + port);
        if (System.nanoTime() > end) {
          throw new IOException(name + " did not listen on port " + port + " within 60 s; command "
              + argv + "; log:\n" + logTail());
        }
      }
      requireAlive("once port " + port + " accepted a connection (another process holds it?)");
    }

    /** Throws, with the log, if its process has exited. */
    void requireAlive(String when) throws IOException {
      Process p = process;
      if (p != null && !p.isAlive()) {
        throw new IOException(name + " exited with status " + p.exitValue() + " " + when
            + "; command " + argv + "; log:\n" + logTail());
      }
    }

    private void awaitPortFree(Duration timeout) throws IOException, InterruptedException {
      long end = System.nanoTime() + timeout.toNanos();
      while (true) {
        try (ServerSocket probe = new ServerSocket()) {
          probe.setReuseAddress(true);
          probe.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
          return;
        } catch (BindException e) {
          if (System.nanoTime() > end) {
            throw new IOException(name + " cannot start: its port " + port + " is held by another"
                + " process (taken while " + name + " was down) and was not released within "
                + timeout + "; " + e.getMessage(), e);
          }
          Thread.sleep(100);
        }
      }
    }

    /** Starts the process without waiting for it (members that wait for each other). */
    synchronized void launch() throws IOException {
      Files.createDirectories(dir);
      process = new ProcessBuilder(argv).redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("server.log").toFile()))
          .directory(dir.toFile()).start();
    }

    /** Starts it with a new command line (a Redis node that changed role). */
    public synchronized void start(List<String> newArgv) throws IOException, InterruptedException {
      argv = List.copyOf(newArgv);
      start();
    }

    /** {@code SIGKILL}, and waits until it has exited. */
    public synchronized void kill() throws IOException, InterruptedException {
      Process p = process;
      if (p == null || !p.isAlive()) {
        return;
      }
      p.destroyForcibly();
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        throw new IOException(this + " did not exit within 30 s of SIGKILL");
      }
    }

    /** The last 3,000 characters of its log. */
    public String logTail() {
      try {
        Path log = dir.resolve("server.log");
        String s = Files.exists(log) ? Files.readString(log) : "";
        return s.length() <= 3000 ? s : s.substring(s.length() - 3000);
      } catch (IOException e) {
        return "(no log: " + e + ")";
      }
    }

    @Override
    public String toString() {
      Process p = process;
      if (p == null) {
        return name + "@" + port + " (never started)";
      }
      // 137 = SIGKILL (128 + 9): a member killed by something other than its own fault shows here
      return name + "@" + port + (p.isAlive() ? " pid " + p.pid() + processState(p.pid())
          : " (down: pid " + p.pid() + " exited with " + p.exitValue() + ")");
    }

    /**
     * " state X" from {@code /proc/<pid>/stat} (R running, S sleeping, D in I/O, T stopped by a
     * signal, Z exited): a member that answers nothing may be stopped rather than stuck.
     */
    private static String processState(long pid) {
      try {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        int close = stat.lastIndexOf(')'); // the command name may hold spaces and parentheses
        return close < 0 || close + 2 >= stat.length() ? "" : " state " + stat.charAt(close + 2);
      } catch (IOException | RuntimeException e) {
        return "";
      }
    }

    void stop() {
      Process p = process;
      if (p == null) {
        return;
      }
      p.destroy();
      try {
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
          p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** What the clusters share: a root directory, members, and closing both. */
  private abstract static class Cluster implements AutoCloseable {
    final Path root;
    final List<Member> members = new ArrayList<>();
    private volatile Path keepLogs;
    private volatile String keepPrefix;

    Cluster(String prefix) throws IOException {
      this.root = Files.createTempDirectory(prefix);
    }

    public List<Member> members() {
      return List.copyOf(members);
    }

    /** Waits until a started member serves (has a leader, for the Raft clusters). */
    void awaitReady(Member m) throws IOException, InterruptedException {}

    /**
     * Starts a killed member again from its data directory; returns once it serves. The exception
     * when it does not carries every member's log tail.
     */
    public void restart(Member m) throws IOException, InterruptedException {
      try {
        m.start();
        awaitReady(m);
        m.requireAlive("after it was seen ready");
      } catch (IOException e) {
        throw new IOException(m + " did not rejoin after its restart: " + e.getMessage() + "\n"
            + logs(), e);
      }
    }

    /** What one member answers about the leader; IOException when it does not answer. */
    interface LeaderProbe {
      Optional<Member> ask(Member m) throws IOException, InterruptedException;
    }

    /** The first answer of a live member that names a leader; empty if none does. */
    Optional<Member> firstAnswer(LeaderProbe probe) {
      for (Member m : members) {
        if (!m.isAlive()) {
          continue;
        }
        try {
          Optional<Member> leader = probe.ask(m);
          if (leader.isPresent()) {
            return leader;
          }
        } catch (IOException e) {
          // this member does not answer; ask the next
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return Optional.empty();
        }
      }
      return Optional.empty();
    }

    /** Starts every member, then waits for each (members wait for each other to elect). */
    void startAll() throws IOException, InterruptedException {
      for (Member m : members) {
        m.launch();
      }
      for (Member m : members) {
        awaitReady(m);
      }
    }

    /** Closes the cluster after a failed start; the exception carries the members' logs. */
    IOException failed(String what, Exception e) {
      String logs = logs();
      close();
      return new IOException(what + " did not come up: " + e + "\n" + logs, e);
    }

    /** Every member's log tail, for failure messages. */
    public String logs() {
      return members.stream().map(m -> "--- " + m + "\n" + m.logTail())
          .collect(Collectors.joining("\n"));
    }

    /**
     * Where {@link #close()} copies every member's whole log ({@code <prefix>-<member>.log})
     * before it deletes the data directories, so that a failed run can still be read.
     */
    public void keepLogsIn(Path dir, String prefix) {
      keepLogs = dir;
      keepPrefix = prefix;
    }

    @Override
    public void close() {
      members.forEach(Member::stop);
      Path to = keepLogs;
      if (to != null) {
        for (Member m : members) {
          Path log = m.dir.resolve("server.log");
          try {
            if (Files.exists(log)) {
              Files.createDirectories(to);
              Files.copy(log, to.resolve(keepPrefix + "-" + m.name + ".log"),
                  StandardCopyOption.REPLACE_EXISTING);
            }
          } catch (IOException e) {
            // best effort: the run's own outcome matters more than its servers' logs
          }
        }
      }
      LocalProcessServer.deleteRecursively(root);
    }
  }

  // ------------------------------------------------------------------ etcd

  /** A cluster with a Raft leader whose members can be killed and started again. */
  public interface RaftCluster extends AutoCloseable {
    /** The members, in the order they were started. */
    List<Member> members();

    /** The member that is Raft leader now, if a live member knows it. */
    Optional<Member> leader();

    /** Starts a killed member again from its data directory; returns once it has rejoined. */
    void restart(Member m) throws IOException, InterruptedException;

    @Override
    void close();
  }

  /** A local etcd cluster; {@link #endpoints()} lists every member's client URL. */
  public static final class EtcdCluster extends Cluster implements RaftCluster {
    private static final Pattern MEMBER_ID = Pattern.compile("\"member_id\":\"(\\d+)\"");
    private static final Pattern LEADER = Pattern.compile("\"leader\":\"(\\d+)\"");
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(60);
    /** Each member's id, as it said when the cluster started. */
    private final Map<String, String> ids = new ConcurrentHashMap<>();
    /** Info-level logs: elections and restarts are what a failed fault run needs to show. */
    private static final List<String> CLUSTER_FLAGS = List.of("--log-level=info");

    private EtcdCluster() throws IOException {
      super("leases-etcd-cluster-");
    }

    /**
     * Starts {@code size} members with the given Raft timings and waits until every one is healthy.
     */
    public static EtcdCluster start(int size, int heartbeatMs, int electionMs)
        throws IOException, InterruptedException {
      return start(size, heartbeatMs, electionMs, List.of());
    }

    /**
     * {@link #start(int, int, int)} with {@code extraFlags} after the cluster's own (a flag given
     * twice takes its last value), e.g. {@code --snapshot-count=100} to make snapshots frequent.
     */
    public static EtcdCluster start(int size, int heartbeatMs, int electionMs,
        List<String> extraFlags) throws IOException, InterruptedException {
      Path binary = LocalProcessServer.findBinary("etcd").orElseThrow(
          () -> new IllegalStateException("etcd is not installed: apt-get install -y etcd-server"));
      EtcdCluster c = new EtcdCluster();
      try {
        int[] client = new int[size];
        int[] peer = new int[size];
        List<String> initial = new ArrayList<>();
        for (int i = 0; i < size; i++) {
          client[i] = FreePorts.pick();
          peer[i] = FreePorts.pick();
          initial.add("m" + i + "=http://127.0.0.1:" + peer[i]);
        }
        String cluster = String.join(",", initial);
        String token = c.root.getFileName().toString();
        List<String> flags = new ArrayList<>(CLUSTER_FLAGS);
        flags.addAll(extraFlags);
        for (int i = 0; i < size; i++) {
          Path dir = c.root.resolve("m" + i);
          c.members.add(new Member("m" + i, client[i], dir, LocalServers.etcdArgv(binary, "m" + i,
              dir.resolve("data"), client[i], peer[i], cluster, token, heartbeatMs, electionMs,
              flags)));
        }
        c.startAll();
        return c;
      } catch (IOException | InterruptedException | RuntimeException e) {
        throw c.failed("the local etcd cluster", e);
      }
    }

    /** {@code http://127.0.0.1:P1,http://127.0.0.1:P2,...}. */
    public String endpoints() {
      return members.stream().map(m -> "http://127.0.0.1:" + m.port)
          .collect(Collectors.joining(","));
    }

    /** The member that says it is the Raft leader, asked of the live members; empty if none. */
    @Override
    public Optional<Member> leader() {
      return firstAnswer(m -> {
        String body = post("http://127.0.0.1:" + m.port + "/v3/maintenance/status", "{}");
        Matcher id = MEMBER_ID.matcher(body);
        Matcher leader = LEADER.matcher(body);
        return id.find() && leader.find() && id.group(1).equals(leader.group(1))
            ? Optional.of(m) : Optional.empty();
      });
    }

    /**
     * Waits until the member itself answers on its port — its status names its own member id, the
     * one it had when the cluster started, which etcd serves only once the member has rejoined
     * (published itself through Raft) — and {@code /health} reports a leader. Fails at once when
     * its process exits; answers from another member (a process that took the port while this one
     * was down and forwards it) do not count.
     */
    @Override
    void awaitReady(Member m) throws IOException, InterruptedException {
      long end = System.nanoTime() + READY_TIMEOUT.toNanos();
      String url = "http://127.0.0.1:" + m.port;
      String last = "no answer";
      while (System.nanoTime() < end) {
        m.requireAlive("before it rejoined the cluster");
        try {
          Matcher id = MEMBER_ID.matcher(post(url + "/v3/maintenance/status", "{}"));
          String expected = ids.get(m.name);
          if (!id.find()) {
            last = "a status without a member id";
          } else if (expected != null && !expected.equals(id.group(1))) {
            last = "port " + m.port + " answers as member " + id.group(1) + ", not " + m.name
                + " (" + expected + "): another process holds the port";
          } else if (!get(url + "/health").contains("\"true\"")) {
            last = "/health is not true yet";
          } else {
            ids.putIfAbsent(m.name, id.group(1));
            return;
          }
        } catch (IOException e) {
          last = e.toString();
        }
        Thread.sleep(50);
      }
      throw new IOException("etcd member " + m.name + " on port " + m.port + " did not rejoin"
          + " within " + READY_TIMEOUT + " (last answer: " + last + ")");
    }
  }

  // ------------------------------------------------------------------ Consul

  /**
   * A local Consul cluster of servers (not dev agents) with data directories,
   * {@code bootstrap_expect} = size, {@code session_ttl_min = "1s"} and {@code raft_multiplier = 1};
   * each server's HTTP API is an agent a client can use.
   */
  public static final class ConsulCluster extends Cluster implements RaftCluster {
    private final List<Integer> serverPorts = new ArrayList<>();

    private ConsulCluster() throws IOException {
      super("leases-consul-cluster-");
    }

    /** Starts {@code size} Consul servers with data directories and waits for a leader. */
    public static ConsulCluster start(int size) throws IOException, InterruptedException {
      Path binary = LocalServers.consulBinary().orElseThrow(() -> new IllegalStateException(
          "consul is not installed: run scripts/install-consul.sh (builds it from its Go module)"));
      ConsulCluster c = new ConsulCluster();
      try {
        int[] http = new int[size];
        int[] serf = new int[size];
        int[] server = new int[size];
        for (int i = 0; i < size; i++) {
          http[i] = FreePorts.pick();
          serf[i] = FreePorts.pick();
          server[i] = FreePorts.pick();
          c.serverPorts.add(server[i]);
        }
        for (int i = 0; i < size; i++) {
          Path dir = c.root.resolve("s" + i);
          List<String> argv = new ArrayList<>(List.of(binary.toString(), "agent", "-server",
              "-bootstrap-expect", Integer.toString(size), "-data-dir",
              dir.resolve("data").toString(), "-node", "leases-s" + i + "-" + http[i],
              "-bind", "127.0.0.1", "-client", "127.0.0.1",
              "-http-port", Integer.toString(http[i]), "-dns-port", "-1", "-grpc-port", "-1",
              "-grpc-tls-port", "-1", "-serf-lan-port", Integer.toString(serf[i]),
              "-serf-wan-port", Integer.toString(FreePorts.pick()),
              "-server-port", Integer.toString(server[i]),
              "-hcl", "ports { https = -1 }", "-hcl", "disable_update_check = true",
              "-hcl", "session_ttl_min = \"1s\"", "-hcl", "performance { raft_multiplier = 1 }"));
          for (int j = 0; j < size; j++) {
            if (j != i) {
              argv.addAll(List.of("-retry-join", "127.0.0.1:" + serf[j]));
            }
          }
          c.members.add(new Member("s" + i, http[i], dir, argv));
        }
        c.startAll();
        return c;
      } catch (IOException | InterruptedException | RuntimeException e) {
        throw c.failed("the local Consul cluster", e);
      }
    }

    /** The member's HTTP address. */
    public static String url(Member m) {
      return "http://127.0.0.1:" + m.port;
    }

    /** The server that is Raft leader, as {@code /v1/status/leader} of a live member names it. */
    @Override
    public Optional<Member> leader() {
      return firstAnswer(m -> {
        String body = get(url(m) + "/v1/status/leader").trim();
        for (int i = 0; i < members.size(); i++) {
          if (body.equals("\"127.0.0.1:" + serverPorts.get(i) + "\"")) {
            return Optional.of(members.get(i));
          }
        }
        return Optional.empty();
      });
    }

    @Override
    void awaitReady(Member m) throws IOException, InterruptedException {
      LocalServers.awaitConsulLeader(url(m), Duration.ofSeconds(90));
    }
  }

  // ------------------------------------------------------------------ Redis

  /**
   * A Redis primary and one replica (no persistence), reached through {@link #vip()}, a proxy
   * that {@link #promote() promotion} moves to the replica. Replication is asynchronous: what the
   * primary acknowledged but had not sent is lost when the replica is promoted.
   */
  public static final class RedisPair extends Cluster {
    private final Path binary;
    private final TcpProxy vip;
    private Member primary;
    private Member replica;

    private RedisPair(Path binary) throws IOException {
      super("leases-redis-pair-");
      this.binary = binary;
      int a = FreePorts.pick();
      int b = FreePorts.pick();
      members.add(new Member("r0", a, root.resolve("r0"), nodeArgv(a, root.resolve("r0"))));
      members.add(new Member("r1", b, root.resolve("r1"), replicaArgv(b, root.resolve("r1"), a)));
      primary = members.get(0);
      replica = members.get(1);
      vip = new TcpProxy(a);
    }

    /** Starts a primary and its replica, without persistence, behind a proxy as virtual IP. */
    public static RedisPair start() throws IOException, InterruptedException {
      Path binary = LocalProcessServer.findBinary("redis-server").orElseThrow(
          () -> new IllegalStateException("redis-server is not installed: apt-get install -y"
              + " redis-server"));
      RedisPair p = new RedisPair(binary);
      try {
        p.primary.start();
        p.replica.start();
        p.awaitInSync(Duration.ofSeconds(60));
        return p;
      } catch (IOException | InterruptedException | RuntimeException e) {
        throw p.failed("the local Redis primary and replica", e);
      }
    }

    /** A node without persistence that sends a full sync at once (not after Redis's 5 s delay). */
    private List<String> nodeArgv(int port, Path dir) {
      List<String> argv = new ArrayList<>(LocalServers.redisArgv(binary, port, dir));
      argv.addAll(List.of("--repl-diskless-sync-delay", "0"));
      return argv;
    }

    private List<String> replicaArgv(int port, Path dir, int primaryPort) {
      List<String> argv = new ArrayList<>(nodeArgv(port, dir));
      argv.addAll(List.of("--replicaof", "127.0.0.1", Integer.toString(primaryPort)));
      return argv;
    }

    /** What clients connect to: {@code redis://127.0.0.1:<vip port>}. */
    public String endpoint() {
      return "redis://127.0.0.1:" + vip.port();
    }

    /** The proxy clients connect to; it points at the current primary. */
    public TcpProxy vip() {
      return vip;
    }

    /** The current primary. */
    public synchronized Member primary() {
      return primary;
    }

    /** The current replica. */
    public synchronized Member replica() {
      return replica;
    }

    /**
     * Kills the primary ({@code SIGKILL}), makes the replica a primary ({@code REPLICAOF NO ONE})
     * and moves the virtual IP to it; the old primary stays down until {@link #rejoin()}.
     */
    public synchronized void promote() throws IOException, InterruptedException {
      primary.kill();
      String reply = command(replica.port, "REPLICAOF", "NO", "ONE");
      if (!reply.equals("+OK")) {
        throw new IOException("REPLICAOF NO ONE on " + replica + " answered " + reply);
      }
      vip.retarget(replica.port);
      Member old = primary;
      primary = replica;
      replica = old;
    }

    /** Starts the old primary (down since {@link #promote()}) as a replica of the new one. */
    public synchronized void rejoin() throws IOException, InterruptedException {
      replica.start(replicaArgv(replica.port, replica.dir, primary.port));
      awaitInSync(Duration.ofSeconds(60));
    }

    /**
     * Kills the primary and starts it again, empty, on the same port; returns once it listens (the
     * replica then resynchronises from it, and is empty too: see {@link #awaitInSync}).
     */
    public synchronized void restartPrimary(long downtimeMs)
        throws IOException, InterruptedException {
      primary.kill();
      Thread.sleep(downtimeMs);
      primary.start(nodeArgv(primary.port, primary.dir));
    }

    /** Waits until the replica reports its link to the primary up. */
    public synchronized void awaitInSync(Duration timeout) throws IOException,
        InterruptedException {
      long end = System.nanoTime() + timeout.toNanos();
      String last = "";
      while (System.nanoTime() < end) {
        try {
          last = command(replica.port, "INFO", "replication");
          if (last.contains("master_link_status:up")) {
            return;
          }
        } catch (IOException e) {
          last = e.toString();
        }
        Thread.sleep(20);
      }
      throw new IOException("the Redis replica " + replica + " did not sync with " + primary
          + " within " + timeout + ": " + last);
    }

    /**
     * One command over RESP; returns a simple reply's line ({@code +OK}, {@code :0}, {@code -ERR
     * ...}), a bulk reply's text, or null for a nil bulk reply.
     */
    static @Nullable String command(int port, String... args) throws IOException {
      try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
        s.setSoTimeout(5000);
        StringBuilder req = new StringBuilder("*" + args.length + "\r\n");
        for (String a : args) {
          req.append('$').append(a.getBytes(StandardCharsets.UTF_8).length).append("\r\n")
              .append(a).append("\r\n");
        }
        OutputStream out = s.getOutputStream();
        out.write(req.toString().getBytes(StandardCharsets.UTF_8));
        out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(),
            StandardCharsets.UTF_8));
        String first = in.readLine();
        if (first == null) {
          throw new IOException("redis on port " + port + " closed the connection");
        }
        if (!first.startsWith("$")) {
          return first;
        }
        int len = Integer.parseInt(first.substring(1));
        if (len < 0) {
          return null;
        }
        char[] buf = new char[Math.max(0, len)];
        int read = 0;
        while (read < len) {
          int n = in.read(buf, read, len - read);
          if (n < 0) {
            break;
          }
          read += n;
        }
        return new String(buf, 0, read);
      }
    }

    @Override
    public void close() {
      vip.close();
      super.close();
    }
  }

  // ------------------------------------------------------------------ HTTP

  private static final HttpClient HTTP = HttpClient.newBuilder()
      .connectTimeout(Duration.ofSeconds(1)).build();

  private static String get(String url) throws IOException, InterruptedException {
    return send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(2)).build());
  }

  private static String post(String url, String body) throws IOException, InterruptedException {
    return send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(2))
        .POST(HttpRequest.BodyPublishers.ofString(body)).build());
  }

  private static String send(HttpRequest r) throws IOException, InterruptedException {
    HttpResponse<String> response = HTTP.send(r, HttpResponse.BodyHandlers.ofString());
    if (response.statusCode() != 200) {
      throw new IOException(r.uri() + " answered " + response.statusCode() + " "
          + response.body());
    }
    return response.body();
  }
}
