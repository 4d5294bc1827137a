package dev.leases.tck.remote;

import dev.leases.HolderId;
import dev.leases.LeaseStore;
import dev.leases.TtlRange;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.Writer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Serves a {@link LeaseStore} (typically the in-memory reference store) to other processes on a
 * loopback port, so that multi-process scenarios (the kit's {@code SIGSTOP}/{@code SIGKILL} tests,
 * the benchmark's worker JVMs) can run against a store that lives in one JVM. Test
 * infrastructure, not a production server: no authentication, loopback only.
 */
public final class LeaseStoreServer implements AutoCloseable {

  private final LeaseStore store;
  private final LoopbackLineServer server;

  private LeaseStoreServer(LeaseStore store) throws IOException {
    this.store = store;
    this.server = LoopbackLineServer.start("leases-store-server", this::serve);
  }

  /** Serves {@code store} on a free loopback port until closed. */
  public static LeaseStoreServer serve(LeaseStore store) throws IOException {
    return new LeaseStoreServer(store);
  }

  /** The loopback port it listens on. */
  public int port() {
    return server.port();
  }

  private void serve(BufferedReader in, Writer out) throws IOException {
    List<LeaseStore.Subscription> subscriptions = new ArrayList<>();
    try {
      String line;
      while ((line = in.readLine()) != null) {
        String[] f = line.split(Wire.SEP, -1);
        if (f[0].equals("SUB") && f.length == 2) {
          subscriptions.add(subscribe(f[1], out));
          continue;
        }
        synchronized (out) {
          out.write(handle(f));
          out.write('\n');
          out.flush();
        }
      }
    } finally {
      subscriptions.forEach(LeaseStore.Subscription::close);
    }
  }

  /**
   * {@code SUB name}: this connection now carries release hints for {@code name}, one {@code REL}
   * line per hint, until it closes.
   */
  private LeaseStore.Subscription subscribe(String name, Writer out) throws IOException {
    LeaseStore.Subscription sub;
    String reply;
    try {
      sub = store.onRelease(name, () -> {
        synchronized (out) {
          try {
            out.write("REL\n");
            out.flush();
          } catch (IOException e) {
            // the subscriber went away; hints are best effort
          }
        }
      });
      reply = "OK";
    } catch (RuntimeException e) {
      sub = () -> {};
      reply = "ERR" + Wire.SEP + e.getClass().getSimpleName() + Wire.SEP + oneLine(e.getMessage());
    }
    synchronized (out) {
      out.write(reply + "\n");
      out.flush();
    }
    return sub;
  }

  private String handle(String[] f) {
    try {
      switch (f[0]) {
        case "ACQ": {
          HolderId holder = new HolderId(f[2]);
          Optional<dev.leases.LeaseGrant> g =
              store.acquireOrRenew(f[1], holder, Duration.ofNanos(Long.parseLong(f[3])));
          return g.map(Wire::grant).orElse("NONE");
        }
        case "REL":
          return "OK" + Wire.SEP + store.release(f[1], new HolderId(f[2]));
        case "TOK": {
          OptionalLong t = store.token(f[1]);
          return "OK" + Wire.SEP + (t.isPresent() ? Long.toString(t.getAsLong()) : "");
        }
        case "INS":
          return Wire.state(store.inspect(f[1]));
        case "RANGE": {
          TtlRange r = store.ttlRange();
          return String.join(Wire.SEP, "OK", Long.toString(r.min().toNanos()),
              Long.toString(r.max().toNanos()), Long.toString(r.granularity().toNanos()));
        }
        default:
          return "ERR" + Wire.SEP + "IllegalArgumentException" + Wire.SEP + "unknown request " + f[0];
      }
    } catch (IllegalArgumentException e) {
      return "ERR" + Wire.SEP + "IllegalArgumentException" + Wire.SEP + oneLine(e.getMessage());
    } catch (RuntimeException e) {
      return "ERR" + Wire.SEP + e.getClass().getSimpleName() + Wire.SEP + oneLine(e.toString());
    }
  }

  private static String oneLine(String s) {
    return s == null ? "" : s.replaceAll("\\p{Cntrl}", " ");
  }

  /** Stops accepting and drops every connection (clients then fail their calls). */
  @Override
  public void close() {
    server.close();
  }
}
