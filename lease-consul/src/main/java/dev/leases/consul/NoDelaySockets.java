package dev.leases.consul;

import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import javax.net.SocketFactory;

/**
 * Plain sockets with {@code TCP_NODELAY} set (Nagle's algorithm off), for the HTTP client a store
 * built from a URL sends its request bodies with.
 *
 * <p>Why: OkHttp writes a request whose headers and body exceed one buffer segment (8 KiB) in two
 * socket writes, and leaves Nagle's algorithm on. The second write then waits for the agent to
 * acknowledge the first, and the agent, still waiting for the rest of the request, delays that
 * acknowledgement (about 40 ms on Linux). A batch transaction of 32 names is about 14 KiB: each one
 * cost 40 ms, so the 313 transactions of a 10,000-name acquire took about 2 s instead of about
 * 0.3 s. HTTPS layers over these sockets too.
 */
final class NoDelaySockets extends SocketFactory {

  static final NoDelaySockets FACTORY = new NoDelaySockets();

  private final SocketFactory plain = SocketFactory.getDefault();

  private NoDelaySockets() {}

  private static Socket noDelay(Socket s) throws IOException {
    s.setTcpNoDelay(true);
    return s;
  }

  @Override
  public Socket createSocket() throws IOException {
    return noDelay(plain.createSocket());
  }

  @Override
  public Socket createSocket(String host, int port) throws IOException {
    return noDelay(plain.createSocket(host, port));
  }

  @Override
  public Socket createSocket(String host, int port, InetAddress localHost, int localPort)
      throws IOException {
    return noDelay(plain.createSocket(host, port, localHost, localPort));
  }

  @Override
  public Socket createSocket(InetAddress host, int port) throws IOException {
    return noDelay(plain.createSocket(host, port));
  }

  @Override
  public Socket createSocket(InetAddress address, int port, InetAddress localAddress,
      int localPort) throws IOException {
    return noDelay(plain.createSocket(address, port, localAddress, localPort));
  }
}
