package dev.leases.benchmarks;

import dev.leases.benchmarks.NemesisChecker.Grant;
import dev.leases.tck.remote.LoopbackLineServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.Writer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The nemesis harness's record of grants, fed by each worker's
 * {@link FailoverWorkerMain.ReportingStore} over loopback, timed by this JVM's
 * {@link System#nanoTime()} (the clock {@link FenceServer} uses too).
 *
 * <p>Protocol: {@code TRY <worker>} answered by {@code OK <seq>} (the call goes out after this
 * answer); {@code GRANT <seq|-1> <token> <holder> <worker>} answered by {@code OK}.
 */
final class GrantLog implements AutoCloseable {

  private final Map<Long, Long> tries = new HashMap<>();
  private final List<Grant> grants = new ArrayList<>();
  private final Set<Long> tokens = new HashSet<>();
  private Grant top;
  private final LoopbackLineServer server;
  private long seq;

  GrantLog() throws IOException {
    server = LoopbackLineServer.start("nemesis-grants", this::serve);
  }

  int port() {
    return server.port();
  }

  synchronized List<Grant> grants() {
    return List.copyOf(grants);
  }

  /**
   * The first grant of the highest token so far (its worker is the newest leader, which may have
   * lost the lease since), or null.
   */
  synchronized Grant top() {
    return top;
  }

  /** Leadership changes so far: distinct tokens granted, less one. */
  synchronized int changes() {
    return Math.max(0, tokens.size() - 1);
  }

  private synchronized long tried() {
    tries.put(++seq, System.nanoTime());
    return seq;
  }

  private synchronized void granted(long trySeq, long token, String holder, String worker) {
    Long tried = tries.remove(trySeq);
    Grant g = new Grant(worker, holder, token, tried == null ? NemesisChecker.UNKNOWN : tried,
        System.nanoTime());
    grants.add(g);
    tokens.add(token);
    if (top == null || token > top.token()) {
      top = g;
    }
  }

  private void serve(BufferedReader in, Writer out) throws IOException {
    String line;
    while ((line = in.readLine()) != null) {
      String[] f = line.trim().split(" ");
      String reply;
      if (f.length == 2 && f[0].equals("TRY")) {
        reply = "OK " + tried();
      } else if (f.length == 5 && f[0].equals("GRANT")) {
        granted(Long.parseLong(f[1]), Long.parseLong(f[2]), f[3], f[4]);
        reply = "OK";
      } else {
        reply = "ERROR expected TRY <worker> or GRANT <seq> <token> <holder> <worker>";
      }
      out.write(reply + "\n");
      out.flush();
    }
  }

  @Override
  public void close() {
    server.close();
  }
}
