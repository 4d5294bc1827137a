package dev.leases;

import java.net.InetAddress;
import java.security.SecureRandom;
import java.util.HexFormat;

/**
 * Who holds a lease: an opaque string that must be unique per process <em>instance</em>.
 *
 * <p>{@link #generate()} makes a fresh id from 128 random bits, with the host name and pid in front
 * for humans reading the store at 3 am. Never persist an id and never derive one from a host name or
 * machine id alone: a forked child or a restored snapshot that inherits its parent's id does not
 * contend for the lease, it silently renews the parent's, and the fencing token never changes.
 *
 * @param value the id as stored; 1 to {@value #MAX_LENGTH} characters, no control characters
 */
public record HolderId(String value) {

  /** Longest accepted id, so that every backend can store it in a key or column. */
  public static final int MAX_LENGTH = 200;

  /**
   * Checks the id: at most {@value #MAX_LENGTH} characters of well-formed UTF-16, not blank, no
   * control characters.
   */
  public HolderId {
    value = LeaseArguments.requireText("holder id", value, MAX_LENGTH);
  }

  /**
   * A new id for this process instance: {@code host/pid/random}. Call it again after a restore. Each
   * call seeds a new generator from the operating system's entropy, so two copies of one restored
   * snapshot (which share every generator's state) still draw different ids.
   */
  public static HolderId generate() {
    byte[] bytes = new byte[16];
    new SecureRandom().nextBytes(bytes);
    String host = hostName();
    return new HolderId(host + "/" + ProcessHandle.current().pid() + "/" + HexFormat.of().formatHex(bytes));
  }

  private static String hostName() {
    try {
      String host = InetAddress.getLocalHost().getHostName();
      String cleaned = host.replaceAll("[^A-Za-z0-9.-]", "");
      return cleaned.isEmpty() ? "host" : cleaned.substring(0, Math.min(cleaned.length(), 64));
    } catch (Exception e) {
      return "host";
    }
  }

  @Override
  public String toString() {
    return value;
  }
}
