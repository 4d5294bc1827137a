package dev.leases.tck.servers;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Answers "does a Docker engine answer here?" without any Docker library: a ping on its socket. */
public final class DockerProbe {

  private DockerProbe() {}

  public static boolean engineAnswers() {
    String host = System.getenv("DOCKER_HOST");
    Path socket = host != null && host.startsWith("unix://")
        ? Path.of(host.substring("unix://".length()))
        : Path.of("/var/run/docker.sock");
    return pingsOk(socket);
  }

  static boolean pingsOk(Path socket) {
    if (!Files.exists(socket)) {
      return false;
    }
    try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      ch.connect(UnixDomainSocketAddress.of(socket));
      ch.write(ByteBuffer.wrap(
          "GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n".getBytes(StandardCharsets.US_ASCII)));
      ByteBuffer buf = ByteBuffer.allocate(512);
      ch.read(buf);
      String reply = new String(buf.array(), 0, buf.position(), StandardCharsets.US_ASCII);
      return reply.startsWith("HTTP/1.") && reply.contains(" 200 ");
    } catch (IOException e) {
      return false;
    }
  }
}
