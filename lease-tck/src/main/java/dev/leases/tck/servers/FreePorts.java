package dev.leases.tck.servers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;

/** Loopback ports for test servers. */
public final class FreePorts {

  private FreePorts() {}

  /** A port that was free on 127.0.0.1 a moment ago. */
  public static int pick() {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      s.setReuseAddress(true);
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("no free loopback port", e);
    }
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
