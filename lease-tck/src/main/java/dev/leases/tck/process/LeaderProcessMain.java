package dev.leases.tck.process;

import dev.leases.LeaseStore;
import dev.leases.leader.LeaderListener;
import dev.leases.leader.LeaderLoop;
import dev.leases.leader.LossReason;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A separate JVM that runs a {@link LeaderLoop} and talks to its parent over stdin/stdout, so that
 * the parent can stop it with {@code SIGSTOP}, resume it, or kill it. Arguments ({@link ChildArgs}):
 * {@code --factory=CLASS [--setting=KEY=VALUE ...] --name=LEASE --ttl-ms=N [--renew-ms=N]}.
 *
 * <p>It prints {@code ACQUIRED t}, {@code LOST t REASON} and {@code ADVANCED a b} as the loop's
 * listener hears them, and answers these commands: {@code CAPTURE} (the worker reads the current
 * token and keeps it, as work that starts now would: prints {@code CAPTURED t}), {@code WRITE}
 * (the worker's write after whatever happened since: prints {@code WRITE t} with the captured token),
 * {@code TOKEN} (prints {@code TOKEN t}, the loop's current token), {@code CLOSE} (closes the loop,
 * releasing the lease, prints {@code CLOSED} and exits).
 */
public final class LeaderProcessMain {

  private LeaderProcessMain() {}

  /** Runs as a child JVM started by the kit; the arguments are {@link ChildArgs}. */
  public static void main(String[] args) throws Exception {
    ChildArgs parsed = ChildArgs.parse(args);
    String name = parsed.require("name");
    long ttlMs = parsed.requireLong("ttl-ms");
    long renewMs = parsed.longOr("renew-ms", 0);
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    LeaseStore store = parsed.recipe().open();
    LeaderLoop.Builder b = LeaderLoop.builder(store, name).ttl(Duration.ofMillis(ttlMs))
        .listener(new LeaderListener() {
          @Override
          public void acquired(String n, long token) {
            out.println("ACQUIRED " + token);
          }

          @Override
          public void lost(String n, long token, LossReason reason) {
            out.println("LOST " + token + " " + reason);
          }

          @Override
          public void tokenAdvanced(String n, long oldToken, long newToken) {
            out.println("ADVANCED " + oldToken + " " + newToken);
          }
        });
    if (renewMs > 0) {
      b.renewInterval(Duration.ofMillis(renewMs));
    }
    LeaderLoop loop = b.start();
    out.println("STARTED " + ProcessHandle.current().pid());
    long captured = 0;
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      switch (line.trim()) {
        case "CAPTURE" -> {
          captured = loop.currentToken();
          out.println("CAPTURED " + captured);
        }
        case "WRITE" -> out.println("WRITE " + captured);
        case "TOKEN" -> out.println("TOKEN " + loop.currentToken());
        case "CLOSE" -> {
          loop.close();
          store.close();
          out.println("CLOSED");
          System.exit(0);
        }
        default -> out.println("ERROR unknown command " + line);
      }
    }
    loop.close();
    store.close();
  }
}
