package dev.leases.etcd;

import dev.leases.HolderId;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import java.nio.charset.StandardCharsets;

/**
 * What the companion key says about the latest tenure of a lease: {@code held|holder} (written by the
 * acquiring transaction, so the key's {@code mod_revision} is the token) or
 * {@code released|token|holder} (written by the releasing transaction). Holder ids contain no control
 * characters but may contain {@code |}, so the holder always comes last.
 */
record LastTenure(boolean released, long token, HolderId holder) {

  private static final String HELD = "held|";
  private static final String RELEASED = "released|";

  static ByteSequence held(HolderId holder) {
    return ByteSequence.from(HELD + holder.value(), StandardCharsets.UTF_8);
  }

  static ByteSequence released(long token, HolderId holder) {
    return ByteSequence.from(RELEASED + token + "|" + holder.value(), StandardCharsets.UTF_8);
  }

  /** Parses the companion key, or throws naming the key and what to do. */
  static LastTenure parse(KeyValue kv) {
    String v = kv.getValue().toString(StandardCharsets.UTF_8);
    try {
      if (v.startsWith(HELD)) {
        return new LastTenure(false, kv.getModRevision(), new HolderId(v.substring(HELD.length())));
      }
      if (v.startsWith(RELEASED)) {
        String rest = v.substring(RELEASED.length());
        int bar = rest.indexOf('|');
        long token = Long.parseLong(rest.substring(0, bar));
        return new LastTenure(true, token, new HolderId(rest.substring(bar + 1)));
      }
    } catch (RuntimeException e) {
      // fall through to the explanation below
    }
    throw new IllegalStateException("etcd key '" + kv.getKey().toString(StandardCharsets.UTF_8)
        + "' was not written by EtcdLeaseStore (value '" + abbreviate(v) + "'); delete it, or give"
        + " this store a keyPrefix that nothing else writes under");
  }

  static String abbreviate(String s) {
    return s.length() <= 80 ? s : s.substring(0, 80) + "...";
  }
}
