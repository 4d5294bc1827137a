package dev.leases.tck.servers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Set;

/** Loopback ports for test servers. */
public final class FreePorts {

  /** Remembered picks: enough for every server a test run starts, far below the ~28k range. */
  private static final int REMEMBERED = 8_192;

  private static final Set<Integer> handedOut = new LinkedHashSet<>();

  private FreePorts() {}

  /**
   * A port that was free on 127.0.0.1 a moment ago and that this JVM has not handed out among its
   * last {@value #REMEMBERED} picks: the kernel gives a just-closed ephemeral port out again, so
   * consecutive picks for one server's several listeners could otherwise coincide. Another process
   * may still take the port before the caller binds it.
   */
  public static int pick() {
    for (int attempt = 0; attempt < 1_000; attempt++) {
      int port;
      try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        s.setReuseAddress(true);
        port = s.getLocalPort();
      } catch (IOException e) {
        throw new UncheckedIOException("no free loopback port", e);
      }
      synchronized (handedOut) {
        if (handedOut.add(port)) {
          if (handedOut.size() > REMEMBERED) {
            Iterator<Integer> oldest = handedOut.iterator();
            oldest.next();
            oldest.remove();
          }
          return port;
        }
      }
    }
    throw new IllegalStateException("the kernel kept handing out loopback ports this JVM already"
        + " uses; widen net.ipv4.ip_local_port_range");
  }

  /** Waits until something accepts connections on 127.0.0.1:{@code port}. */
  public static boolean awaitListening(int port, Duration timeout) throws InterruptedException {
    long end = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < end) {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 200);
        return true;
      } catch (IOException e) {
        Thread.sleep(50);
      }
    }
    return false;
  }
}
