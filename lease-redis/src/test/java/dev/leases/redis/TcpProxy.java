package dev.leases.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A loopback TCP proxy between one client and a server, to break that client's connection without
 * disturbing anyone else. {@link #stall()} stops moving bytes (as a partition does: nothing is lost,
 * it arrives after {@link #forward()}); {@link #cut()} closes every connection and refuses new ones
 * until {@link #forward()}.
 */
final class TcpProxy implements AutoCloseable {

  private enum Mode { FORWARD, STALL, CUT }

  private final ServerSocket server;
  private final int targetPort;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final Object gate = new Object();
  private volatile Mode mode = Mode.FORWARD;
  private volatile boolean closed;

  TcpProxy(int targetPort) throws IOException {
    this.targetPort = targetPort;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t = new Thread(this::acceptLoop, "tcp-proxy-accept");
    t.setDaemon(true);
    t.start();
  }

  String uri() {
    return "redis://127.0.0.1:" + server.getLocalPort();
  }

  void stall() {
    mode = Mode.STALL;
  }

  void cut() {
    mode = Mode.CUT;
    for (Socket s : sockets) {
      closeQuietly(s);
    }
    sockets.clear();
  }

  void forward() {
    synchronized (gate) {
      mode = Mode.FORWARD;
      gate.notifyAll();
    }
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
        pump(client, upstream);
        pump(upstream, client);
      } catch (IOException e) {
        if (closed) {
          return;
        }
      }
    }
  }

  private void pump(Socket from, Socket to) {
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
          out.write(buf, 0, n);
          out.flush();
        }
      } catch (IOException | InterruptedException e) {
        // connection closed or cut
      } finally {
        closeQuietly(from);
        closeQuietly(to);
      }
    }, "tcp-proxy-pump");
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
