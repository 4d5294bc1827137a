package dev.leases.tck.servers;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A loopback TCP proxy in front of one server, to partition one client from it without disturbing
 * anyone else, and to record what the client sends.
 *
 * <ul>
 *   <li>{@link #cut()}: closes every connection and refuses new ones until {@link #forward()}.
 *   <li>{@link #stall()}: keeps connections open but moves no bytes (a silent partition); bytes
 *       sent meanwhile arrive after {@link #forward()}.
 *   <li>{@link #clientBytes()}: everything each client connection sent, in order.
 *   <li>{@link #retarget(int)}: moves it to another server, like a virtual IP moved to a promoted
 *       replica: connections open to the old server are closed, new ones reach the new server.
 * </ul>
 */
public final class TcpProxy implements AutoCloseable {

  private enum Mode { FORWARD, STALL, CUT }

  private final ServerSocket server;
  private volatile int targetPort;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final List<ByteArrayOutputStream> recorded = new CopyOnWriteArrayList<>();
  private final Object gate = new Object();
  private volatile Mode mode = Mode.FORWARD;
  private volatile boolean closed;

  /** Starts forwarding a free loopback port to 127.0.0.1:{@code targetPort}. */
  public TcpProxy(int targetPort) throws IOException {
    this.targetPort = targetPort;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t = new Thread(this::acceptLoop, "leases-tcp-proxy-accept");
    t.setDaemon(true);
    t.start();
  }

  /** The loopback port clients connect to. */
  public int port() {
    return server.getLocalPort();
  }

  /** The server port new connections are forwarded to. */
  public int targetPort() {
    return targetPort;
  }

  /**
   * Forwards new connections to 127.0.0.1:{@code port} from now on and closes every connection
   * open to the old server (its clients see them drop and reconnect, to the new one). The mode
   * (forward, stall, cut) is unchanged. A connection accepted while this runs may still reach the
   * old server once; it is closed too if it was registered before the sockets are closed.
   */
  public void retarget(int port) {
    targetPort = port;
    for (Socket s : sockets) {
      closeQuietly(s);
    }
    sockets.clear();
  }

  /** Closes every connection and refuses new ones until {@link #forward()}. */
  public void cut() {
    mode = Mode.CUT;
    for (Socket s : sockets) {
      closeQuietly(s);
    }
    sockets.clear();
  }

  /** Keeps connections open but moves no bytes; they arrive after {@link #forward()}. */
  public void stall() {
    mode = Mode.STALL;
  }

  /** Back to normal. */
  public void forward() {
    synchronized (gate) {
      mode = Mode.FORWARD;
      gate.notifyAll();
    }
  }

  /** The bytes each client connection has sent so far, one entry per connection. */
  public List<byte[]> clientBytes() {
    List<byte[]> out = new ArrayList<>();
    for (ByteArrayOutputStream b : recorded) {
      synchronized (b) {
        out.add(b.toByteArray());
      }
    }
    return out;
  }

  private void acceptLoop() {
    while (!closed) {
      try {
        Socket client = server.accept();
        if (mode == Mode.CUT) {
          closeQuietly(client);
          continue;
        }
        Socket upstream = new Socket();
        upstream.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), targetPort), 2000);
        client.setTcpNoDelay(true);
        upstream.setTcpNoDelay(true);
        sockets.add(client);
        sockets.add(upstream);
        ByteArrayOutputStream record = new ByteArrayOutputStream();
        recorded.add(record);
        pump(client, upstream, record);
        pump(upstream, client, null);
      } catch (IOException e) {
        if (closed) {
          return;
        }
      }
    }
  }

  private void pump(Socket from, Socket to, ByteArrayOutputStream record) {
    Thread t = new Thread(() -> {
      byte[] buf = new byte[16 * 1024];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        while (true) {
          awaitNotStalled();
          int n = in.read(buf);
          if (n < 0) {
            break;
          }
          awaitNotStalled();
          if (mode == Mode.CUT) {
            break;
          }
          if (record != null) {
            synchronized (record) {
              record.write(buf, 0, n);
            }
          }
          out.write(buf, 0, n);
          out.flush();
        }
      } catch (IOException | InterruptedException e) {
        // closed or cut
      } finally {
        closeQuietly(from);
        closeQuietly(to);
      }
    }, "leases-tcp-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  private void awaitNotStalled() throws InterruptedException {
    synchronized (gate) {
      while (mode == Mode.STALL && !closed) {
        gate.wait(100);
      }
    }
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // ignore
    }
  }

  @Override
  public void close() {
    closed = true;
    forward();
    cut();
    try {
      server.close();
    } catch (IOException e) {
      // ignore
    }
  }
}
