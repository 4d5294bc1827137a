package dev.leases.consul;

import dev.leases.spi.SecretSetting;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Objects;
import org.kiwiproject.consul.AuthTokenProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the ACL token of a client the library builds comes from: a fixed value, or a file that is
 * read when the store is built and read again before a request whenever the file's modification
 * time or size has changed, and at least once every {@value #REREAD_MS} ms (a file system's
 * coarse modification times could hide a rewrite of the same length), so that a rotated token is
 * sent from the next request on without a restart. A file that cannot be read again (missing, empty, not a token) keeps the last good token
 * in use and logs a warning that names the file. Nothing here prints a token: {@link #toString()}
 * says where it comes from.
 */
abstract class AclToken implements AuthTokenProvider {

  private static final Logger log = LoggerFactory.getLogger(AclToken.class);

  /** A token file is read again at least this often (before a request), changed or not. */
  static final long REREAD_MS = 1000;

  /** The token to send now. */
  @Override
  public abstract String getToken();

  static AclToken fixed(String token) {
    String t = requireToken(token, "aclToken");
    return new AclToken() {
      @Override
      public String getToken() {
        return t;
      }

      @Override
      public String toString() {
        return "an ACL token given inline";
      }
    };
  }

  /**
   * The token in {@code file}, read now.
   *
   * @throws IllegalArgumentException if it cannot be read or holds no token (naming the file)
   */
  static AclToken file(Path file) {
    return new FromFile(Objects.requireNonNull(file, "aclTokenFile must not be null"));
  }

  /**
   * Checks an ACL token: non-blank printable ASCII without spaces (a file's one trailing line
   * break is dropped first by {@link SecretSetting#readFile}); returns it. The message names
   * {@code source}, never the value.
   */
  static String requireToken(String token, String source) {
    Objects.requireNonNull(token, source + " must not be null");
    if (token.isBlank() || token.chars().anyMatch(c -> c < 0x21 || c > 0x7e)) {
      throw new IllegalArgumentException(source + " must be non-blank printable ASCII without"
          + " spaces (a Consul token is its SecretID, a UUID)");
    }
    return token;
  }

  private static final class FromFile extends AclToken {
    private final Path file;
    private String token;
    private Object version;
    private long readAtNanos;
    private boolean warned;

    FromFile(Path file) {
      this.file = file;
      Object v = version();
      this.token = read(); // throws: a store must not start without its token
      this.version = v;
      this.readAtNanos = System.nanoTime();
    }

    @Override
    public synchronized String getToken() {
      Object v = version();
      long now = System.nanoTime();
      if (v == null ? now - readAtNanos >= REREAD_MS * 1_000_000L && !warned
          : !v.equals(version) || now - readAtNanos >= REREAD_MS * 1_000_000L) {
        readAtNanos = now;
        try {
          token = read();
          version = v;
          warned = false;
        } catch (IllegalArgumentException e) {
          if (!warned) {
            warned = true;
            log.warn("the ACL token file {} cannot be used now ({}); still sending the token read"
                + " from it before", file, e.getMessage());
          }
        }
      }
      return token;
    }

    /** Modification time and size, or null if the file cannot be looked at. */
    private Object version() {
      try {
        BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
        return a.lastModifiedTime() + "/" + a.size();
      } catch (IOException | RuntimeException e) {
        return null;
      }
    }

    private String read() {
      return requireToken(SecretSetting.readFile(null, "ACL token file", file),
          "the ACL token in " + file);
    }

    @Override
    public String toString() {
      return "the ACL token in " + file;
    }
  }
}
