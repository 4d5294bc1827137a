package dev.leases.tck.servers;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The proxy as a movable "virtual IP": retargeting drops old connections, new ones go to the new server. */
class TcpProxyTest {

  /** A loopback server that answers every connection with one line naming itself. */
  private static ServerSocket namedServer(String name) throws IOException {
    ServerSocket s = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t = new Thread(() -> {
      while (!s.isClosed()) {
        try (Socket c = s.accept(); OutputStream out = c.getOutputStream()) {
          out.write((name + "\n").getBytes(StandardCharsets.UTF_8));
          out.flush();
          c.getInputStream().read(); // hold the connection until the client goes
        } catch (IOException e) {
          // closed
        }
      }
    });
    t.setDaemon(true);
    t.start();
    return s;
  }

  private static String firstLine(Socket s) throws IOException {
    s.setSoTimeout(5000);
    return new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8))
        .readLine();
  }

  @Test
  void retargetSendsNewConnectionsToTheNewServerAndClosesTheOldOnes() throws Exception {
    try (ServerSocket a = namedServer("a"); ServerSocket b = namedServer("b");
        TcpProxy proxy = new TcpProxy(a.getLocalPort())) {
      assertThat(proxy.targetPort()).isEqualTo(a.getLocalPort());
      Socket before = new Socket(InetAddress.getLoopbackAddress(), proxy.port());
      assertThat(firstLine(before)).isEqualTo("a");

      proxy.retarget(b.getLocalPort());

      assertThat(proxy.targetPort()).isEqualTo(b.getLocalPort());
      assertThat(before.getInputStream().read()).as("the old connection is closed").isEqualTo(-1);
      try (Socket after = new Socket(InetAddress.getLoopbackAddress(), proxy.port())) {
        assertThat(firstLine(after)).isEqualTo("b");
      }
      before.close();
    }
  }
}
