package dev.leases.benchmarks;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseStore;
import dev.leases.leader.LeaderListener;
import dev.leases.leader.LeaderLoop;
import dev.leases.leader.LossReason;
import dev.leases.spi.ForwardingLeaseStore;
import dev.leases.tck.process.ChildArgs;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;

/**
 * One peer of the failover benchmark, in its own JVM: a {@link LeaderLoop} on the lease and a work
 * loop that, while the loop leads, does units of work against the harness's fenced resource
 * ({@link FenceServer}). A unit reads the token <em>once</em>, writes with it ("begin"), works for
 * {@code --work-ms}, and writes again with the same token ("end") — so a peer frozen with
 * {@code SIGSTOP} mid-unit resumes and sends its "end" write with the token it started with.
 *
 * <p>Arguments: {@code --factory=CLASS [--setting=K=V ...] --name=LEASE --ttl-ms=N --fence-port=P
 * --worker=ID [--work-ms=20] [--history-port=P] [--rejected-pause-ms=0]}; with a history port every
 * grant is reported to the nemesis harness ({@link ReportingStore}); after a rejected write the
 * work loop waits {@code rejected-pause-ms} before it tries again (a fenced peer keeps trying until
 * its loop stands down, without spinning). Stdout: {@code READY}, {@code ACQUIRED t}, {@code LOST t REASON},
 * {@code FENCED t highest}, {@code CLOSED}. Stdin: {@code CLOSE} stops the work loop, closes the
 * leader loop (which releases the lease) and exits; end of input does the same.
 */
public final class FailoverWorkerMain {

  private FailoverWorkerMain() {}

  public static void main(String[] args) throws Exception {
    ChildArgs parsed = ChildArgs.parse(args);
    if (parsed.options().containsKey("peer")) { // bench --peers: another library's mechanism
      PeerWorker.run(parsed);
      return;
    }
    String worker = parsed.require("worker");
    long workMs = parsed.longOr("work-ms", 20);
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    LeaseStore opened = parsed.recipe().open();
    long historyPort = parsed.longOr("history-port", 0);
    LeaseStore store = historyPort > 0
        ? new ReportingStore(opened, (int) historyPort, worker) : opened;
    LeaderLoop loop = LeaderLoop.builder(store, parsed.require("name"))
        .ttl(Duration.ofMillis(parsed.requireLong("ttl-ms")))
        .listener(new LeaderListener() {
          @Override
          public void acquired(String n, long token) {
            out.println("ACQUIRED " + token);
          }

          @Override
          public void lost(String n, long token, LossReason reason) {
            out.println("LOST " + token + " " + reason);
          }
        })
        .start();
    Fence fence = new Fence((int) parsed.requireLong("fence-port"), worker);
    long rejectedPauseMs = parsed.longOr("rejected-pause-ms", 0);
    Thread work = new Thread(() -> work(loop, fence, workMs, rejectedPauseMs, out), "work");
    work.setDaemon(true);
    work.start();
    out.println("READY");
    FailoverWorkerMain.awaitClose(out);
    stopping = true;
    work.join(workMs + 2000);
    loop.close();
    store.close();
    out.println("CLOSED");
    System.exit(0);
  }

  private static volatile boolean stopping;

  /** Reads commands from standard input until {@code CLOSE} or its end; any other is an ERROR. */
  static void awaitClose(PrintStream out) throws IOException {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null && !line.trim().equals("CLOSE")) {
      out.println("ERROR unknown command " + line);
    }
  }

  private static void work(LeaderLoop loop, Fence fence, long workMs, long rejectedPauseMs,
      PrintStream out) {
    while (!stopping) {
      try {
        long token = loop.currentToken();
        if (token == 0) {
          loop.awaitLeadership(Duration.ofMillis(200));
          continue;
        }
        if (!fence.write(token, true, out)) {
          sleepQuietly(rejectedPauseMs);
          continue;
        }
        if (stopping) {
          continue;
        }
        Thread.sleep(workMs);
        if (!stopping) {
          fence.write(token, false, out);
        }
      } catch (InterruptedException e) {
        return;
      } catch (IOException e) {
        out.println("ERROR fence " + e);
        sleepQuietly(workMs);
      }
    }
  }

  private static void sleepQuietly(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The worker's connection to the {@link FenceServer}; {@link PeerWorker} writes through it too. */
  static final class Fence {
    private final LineClient client;
    private final String worker;
    private long seq;

    Fence(int port, String worker) {
      this.client = new LineClient(port);
      this.worker = worker;
    }

    /**
     * Returns true if accepted; prints FENCED when rejected. The sequence number grows with every
     * write and is odd for the first write of a unit ({@code begin}), even for the last, so that the
     * harness can fault a worker mid-unit.
     */
    boolean write(long token, boolean begin, PrintStream out) throws IOException {
      seq += begin ? 1 + (seq & 1) : 2 - (seq & 1);
      String reply = client.call("WRITE " + token + " " + worker + " " + seq);
      if (reply.startsWith("REJECTED ")) {
        out.println("FENCED " + token + " " + reply.substring("REJECTED ".length()));
        return false;
      }
      return reply.equals("OK");
    }
  }

  /**
   * Reports every grant the store makes to this worker to the nemesis harness's {@link GrantLog},
   * bracketing each acquire-or-renew call: {@code TRY} is acknowledged <em>before</em> the call is
   * sent and {@code GRANT} is sent after it returns, so the harness knows an interval of its own
   * clock that contains the grant. A report that cannot be delivered is logged and skipped (the
   * call still goes out); the harness counts grants reported without a {@code TRY}.
   */
  static final class ReportingStore extends ForwardingLeaseStore {
    private final LineClient client;
    private final String worker;

    ReportingStore(LeaseStore delegate, int port, String worker) {
      super(delegate);
      this.client = new LineClient(port);
      this.worker = worker;
    }

    @Override
    public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
      String attempt = report("TRY " + worker);
      Optional<LeaseGrant> g = super.acquireOrRenew(name, holder, ttl);
      g.ifPresent(grant -> report("GRANT " + (attempt.startsWith("OK ") ? attempt.substring(3)
          : "-1") + " " + grant.token() + " " + grant.holder().value() + " " + worker));
      return g;
    }

    private synchronized String report(String line) {
      try {
        return client.call(line);
      } catch (IOException e) {
        System.err.println("grant report '" + line + "' not delivered: " + e);
        return "";
      }
    }
  }

  /** One loopback connection for request/reply lines, reopened after a failure. */
  private static final class LineClient {
    private final int port;
    private Socket socket;
    private BufferedReader in;
    private Writer w;

    LineClient(int port) {
      this.port = port;
    }

    synchronized String call(String line) throws IOException {
      try {
        if (socket == null) {
          socket = new Socket();
          socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 2000);
          socket.setSoTimeout(5000);
          socket.setTcpNoDelay(true);
          in = new BufferedReader(new InputStreamReader(socket.getInputStream(),
              StandardCharsets.UTF_8));
          w = new OutputStreamWriter(socket.getOutputStream(), StandardCharsets.UTF_8);
        }
        w.write(line + "\n");
        w.flush();
        String reply = in.readLine();
        if (reply == null) {
          throw new IOException("the harness closed the connection on port " + port);
        }
        return reply;
      } catch (IOException e) {
        if (socket != null) {
          socket.close();
        }
        socket = null;
        throw e;
      }
    }
  }
}
