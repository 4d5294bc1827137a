package dev.leases.redis;

import dev.leases.once.RunLedgerFactory;
import java.util.Map;

/**
 * Opens a {@link RedisRunLedger} that owns its client, from the settings of
 * {@link RedisLeaseStoreFactory} ({@code uri} required, {@code keyPrefix}, {@code commandTimeoutMs},
 * credentials and TLS): give both factories the same settings and the records sit beside the
 * leases. Unknown settings are rejected by name.
 */
public final class RedisRunLedgerFactory implements RunLedgerFactory {

  /** A factory; it keeps no state. */
  public RedisRunLedgerFactory() {}

  @Override
  public RedisRunLedger open(Map<String, String> settings) {
    return RedisRunLedger.build(RedisLeaseStoreFactory.builder(settings, "the Redis run ledger",
        System::getenv));
  }
}
