package dev.leases.tck.servers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loopback ports for test servers, picked so that nothing else on the machine takes them between
 * the pick and the server's bind.
 *
 * <p>Two kinds of competitor took such ports before: outgoing connections, whose source ports the
 * kernel draws from its ephemeral range (where {@code bind(0)} also draws), and test servers of
 * other JVMs running at the same time (the test command runs suites in parallel). A pick therefore
 * comes from below the ephemeral range, and is reserved across processes by a lock on one byte of
 * a shared file ({@code java.io.tmpdir/leases-test-ports.lock}, byte offset = port), held while
 * this JVM lives or until the pick is among the oldest beyond the last {@value #REMEMBERED}. A
 * process that does not use this class may still take a port first.
 */
public final class FreePorts {

  private static final Logger logger = LoggerFactory.getLogger(FreePorts.class);

  /** Remembered picks: enough for every server a test run starts, far below the range's size. */
  private static final int REMEMBERED = 8_192;

  /** The lowest port handed out: above the well-known and the stores' default ports. */
  static final int LOWEST = 10_000;

  private static final Map<Integer, @Nullable FileLock> handedOut = new LinkedHashMap<>();

  private static final @Nullable FileChannel reservations = openReservations();

  private FreePorts() {}

  /**
   * A port below the kernel's ephemeral range that was free on 127.0.0.1 a moment ago, that no
   * other JVM using this class holds, and that this JVM has not handed out among its last
   * {@value #REMEMBERED} picks.
   */
  public static int pick() {
    int highest = ephemeralLow() - 1;
    ThreadLocalRandom random = ThreadLocalRandom.current();
    for (int attempt = 0; attempt < 10_000; attempt++) {
      int port = random.nextInt(LOWEST, highest + 1);
      synchronized (handedOut) {
        if (handedOut.containsKey(port)) {
          continue;
        }
        FileLock lock = reserve(port);
        if (reservations != null && lock == null) {
          continue; // another JVM holds it
        }
        if (!bindable(port)) {
          release(lock);
          continue;
        }
        handedOut.put(port, lock);
        if (handedOut.size() > REMEMBERED) {
          Iterator<Map.Entry<Integer, @Nullable FileLock>> oldest = handedOut.entrySet().iterator();
          release(oldest.next().getValue());
          oldest.remove();
        }
        return port;
      }
    }
    throw new IllegalStateException("no free loopback port in " + LOWEST + ".." + highest
        + " after 10,000 tries: stop stray test servers, or lower the ephemeral range's start"
        + " (net.ipv4.ip_local_port_range)");
  }

  /** The first port of the kernel's ephemeral range (Linux's default when it cannot be read). */
  static int ephemeralLow() {
    try {
      String[] range = Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range"))
          .trim().split("\\s+");
      int low = Integer.parseInt(range[0]);
      return low > LOWEST + 1_000 ? low : 32_768;
    } catch (IOException | RuntimeException e) {
      return 32_768;
    }
  }

  private static boolean bindable(int port) {
    try (ServerSocket s = new ServerSocket()) {
      s.setReuseAddress(true); // as the servers do, so a port in TIME_WAIT counts as free
      s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static @Nullable FileChannel openReservations() {
    Path file = Path.of(System.getProperty("java.io.tmpdir"), "leases-test-ports.lock");
    try {
      return FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
    } catch (IOException | RuntimeException e) {
      logger.warn("cannot open {} to reserve test ports across JVMs ({}); test servers of"
          + " parallel suites may collide on a port", file, e.toString());
      return null;
    }
  }

  private static @Nullable FileLock reserve(int port) {
    if (reservations == null) {
      return null;
    }
    try {
      return reservations.tryLock(port, 1, false);
    } catch (OverlappingFileLockException e) {
      return null;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot lock byte " + port + " of the test-port reservations", e);
    }
  }

  private static void release(@Nullable FileLock lock) {
    if (lock != null) {
      try {
        lock.release();
      } catch (IOException e) {
        throw new UncheckedIOException("cannot release a test-port reservation", e);
      }
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
