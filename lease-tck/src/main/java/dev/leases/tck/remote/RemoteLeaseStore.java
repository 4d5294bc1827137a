package dev.leases.tck.remote;

import dev.leases.HolderId;
import dev.leases.LeaseArguments;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import dev.leases.LeaseStoreUnavailableException;
import dev.leases.TtlRange;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A client of a {@link LeaseStoreServer} on this machine. Every call is bounded by the timeout and
 * fails with {@link LeaseStoreUnavailableException} (reconnecting on the next call). Release hints
 * ({@link #onRelease}) arrive on a dedicated connection per subscription; like every backend's,
 * they are lost while it is down (it does not reconnect), so followers still poll.
 */
public final class RemoteLeaseStore implements LeaseStore {

  private static final Logger log = LoggerFactory.getLogger(RemoteLeaseStore.class);

  private final int port;
  private final Duration timeout;
  private final TtlRange range;
  private Socket socket;
  private BufferedReader in;
  private Writer out;
  private volatile boolean closed;
  private final java.util.Set<Socket> subscriptions =
      java.util.concurrent.ConcurrentHashMap.newKeySet();

  /** A client of the {@link LeaseStoreServer} on loopback {@code port}; each call is bounded by {@code timeout}. */
  public RemoteLeaseStore(int port, Duration timeout) {
    this.port = port;
    this.timeout = LeaseArguments.requirePositive("timeout", timeout);
    String[] f = call("RANGE");
    this.range = new TtlRange(Duration.ofNanos(Long.parseLong(f[1])),
        Duration.ofNanos(Long.parseLong(f[2])), Duration.ofNanos(Long.parseLong(f[3])));
  }

  @Override
  public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(holder, "holder must not be null");
    range.check(ttl);
    String[] f = call("ACQ", name, holder.value(), Long.toString(ttl.toNanos()));
    return f[0].equals("NONE") ? Optional.empty() : Optional.of(Wire.grant(name, holder, f));
  }

  @Override
  public boolean release(String name, HolderId holder) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(holder, "holder must not be null");
    return Boolean.parseBoolean(call("REL", name, holder.value())[1]);
  }

  @Override
  public OptionalLong token(String name) {
    LeaseArguments.requireName(name);
    String[] f = call("TOK", name);
    return f[1].isEmpty() ? OptionalLong.empty() : OptionalLong.of(Long.parseLong(f[1]));
  }

  @Override
  public LeaseState inspect(String name) {
    LeaseArguments.requireName(name);
    return Wire.state(name, call("INS", name));
  }

  @Override
  public TtlRange ttlRange() {
    return range;
  }

  @Override
  public Subscription onRelease(String name, Runnable listener) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(listener, "listener must not be null");
    if (closed) {
      throw new LeaseStoreClosedException("this RemoteLeaseStore is closed");
    }
    Socket s = new Socket();
    try {
      s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port),
          (int) Math.max(1, timeout.toMillis()));
      s.setSoTimeout((int) Math.max(1, timeout.toMillis()));
      s.setTcpNoDelay(true);
      BufferedReader r = new BufferedReader(new InputStreamReader(s.getInputStream(),
          StandardCharsets.UTF_8));
      Writer w = new OutputStreamWriter(s.getOutputStream(), StandardCharsets.UTF_8);
      w.write("SUB" + Wire.SEP + name + "\n");
      w.flush();
      String reply = r.readLine();
      if (reply == null || !reply.equals("OK")) {
        s.close();
        return () -> {};
      }
      subscriptions.add(s);
      s.setSoTimeout(0);
      Thread t = new Thread(() -> {
        try {
          while (r.readLine() != null) {
            try {
              listener.run();
            } catch (RuntimeException e) { // a listener that throws stays subscribed
              log.warn("release listener for lease '{}' threw; it stays subscribed", name, e);
            }
          }
        } catch (IOException | RuntimeException e) {
          // closed or gone: hints are best effort
        }
      }, "leases-remote-hints-" + name);
      t.setDaemon(true);
      t.start();
    } catch (IOException e) {
      closeQuietly(s);
      return () -> {}; // no hints without a connection; followers poll
    }
    return () -> {
      subscriptions.remove(s);
      closeQuietly(s);
    };
  }

  private synchronized String[] call(String... fields) {
    if (closed) {
      throw new LeaseStoreClosedException("this RemoteLeaseStore is closed");
    }
    try {
      if (socket == null) {
        Socket s = new Socket();
        s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port),
            (int) Math.max(1, timeout.toMillis()));
        s.setSoTimeout((int) Math.max(1, timeout.toMillis()));
        s.setTcpNoDelay(true);
        socket = s;
        in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
        out = new OutputStreamWriter(s.getOutputStream(), StandardCharsets.UTF_8);
      }
      out.write(String.join(Wire.SEP, fields));
      out.write('\n');
      out.flush();
      String line = in.readLine();
      if (line == null) {
        throw new IOException("the lease store server closed the connection");
      }
      String[] f = line.split(Wire.SEP, -1);
      if (f[0].equals("ERR")) {
        if (f[1].equals("IllegalArgumentException")) {
          throw new IllegalArgumentException(f[2]);
        }
        throw new LeaseStoreUnavailableException("remote store failed: " + f[2], null);
      }
      return f;
    } catch (IOException e) {
      disconnect();
      throw new LeaseStoreUnavailableException("lease store server on 127.0.0.1:" + port
          + " did not answer within " + timeout + ": " + e.getMessage() + "; outcome unknown", e);
    }
  }

  private void disconnect() {
    if (socket != null) {
      try {
        socket.close();
      } catch (IOException e) {
        // dropping it anyway
      }
    }
    socket = null;
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // closing anyway
    }
  }

  @Override
  public synchronized void close() {
    closed = true;
    disconnect();
    subscriptions.forEach(RemoteLeaseStore::closeQuietly);
    subscriptions.clear();
  }
}
