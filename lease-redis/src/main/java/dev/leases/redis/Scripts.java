package dev.leases.redis;

/**
 * The Lua scripts. Each runs atomically on the primary that owns the lease's slot; every key a
 * script touches is passed in KEYS and shares one hash tag ({@link KeyLayout}). Time comes from the
 * server's {@code TIME}, never from the client. Numbers written back to Redis go through
 * {@code string.format('%d')} so that they are stored as plain integers.
 */
final class Scripts {

  private Scripts() {}

  /**
   * KEYS: lease, fence, last. ARGV: holder, ttl in ms.
   * Reply: {@code {1, token, expiresAtMs}} when granted or renewed, {@code {0}} when another holder
   * has an unexpired lease.
   *
   * <p>Same holder with a live lease key: same token, expiry moved to now + ttl. No lease key (never
   * granted, released, expired — Redis removed it — or deleted out of band): a new token, strictly
   * above the counter, above the last tenure's token, and at least the server's time in ms, so that a
   * restarted non-persistent server (counter lost) still issues larger tokens.
   */
  static final LuaScript ACQUIRE_OR_RENEW = new LuaScript("acquireOrRenew", """
      local lease, fence, last = KEYS[1], KEYS[2], KEYS[3]
      local holder, ttl = ARGV[1], tonumber(ARGV[2])
      local t = redis.call('TIME')
      local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      local exp = now + ttl
      local cur = redis.call('HMGET', lease, 'holder', 'token')
      local token
      if cur[1] == holder and tonumber(cur[2]) then
        token = tonumber(cur[2])
      elseif cur[1] then
        return {0}
      else
        token = redis.call('INCR', fence)
        local floor = now
        local prev = tonumber(redis.call('HGET', last, 'token') or '0') or 0
        if prev >= floor then floor = prev + 1 end
        if token < floor then
          token = floor
          redis.call('SET', fence, string.format('%d', token))
        end
        redis.call('HSET', lease, 'holder', holder, 'token', string.format('%d', token))
      end
      redis.call('PEXPIREAT', lease, string.format('%d', exp))
      redis.call('HSET', last, 'holder', holder, 'token', string.format('%d', token),
        'exp', string.format('%d', exp))
      return {1, token, exp}
      """);

  /**
   * KEYS: lease, last. ARGV: holder, channel, name. Reply: 1 if {@code holder} had a live lease
   * (now deleted, the release announced on the channel), else 0. The counter is never touched; the
   * last tenure keeps its token but loses its holder, so that inspection says FREE.
   */
  static final LuaScript RELEASE = new LuaScript("release", """
      if redis.call('HGET', KEYS[1], 'holder') == ARGV[1] then
        redis.call('DEL', KEYS[1])
        redis.call('HDEL', KEYS[2], 'holder', 'exp')
        redis.call('PUBLISH', ARGV[2], ARGV[3])
        return 1
      end
      return 0
      """);

  /**
   * KEYS: lease, fence, last. Reply:
   * {@code {1, holder, token, pttlMs, nowMs}} held;
   * {@code {2, holder, token, expiredAtMs}} expired and not taken;
   * {@code {0, highestToken}} free (highest token 0 if none was ever issued).
   *
   * <p>When the last tenure should still be running but its lease key is gone (deleted out of
   * band), the evidence is cleared so that the lease reads FREE now and later, instead of turning
   * EXPIRED on its own when that tenure's expiry passes.
   */
  static final LuaScript INSPECT = new LuaScript("inspect", """
      local lease, fence, last = KEYS[1], KEYS[2], KEYS[3]
      local t = redis.call('TIME')
      local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      local hi = tonumber(redis.call('GET', fence) or '0') or 0
      local l = redis.call('HMGET', last, 'holder', 'token', 'exp')
      local lt = tonumber(l[2] or '0') or 0
      if lt > hi then hi = lt end
      local cur = redis.call('HMGET', lease, 'holder', 'token')
      if cur[1] then
        return {1, cur[1], tonumber(cur[2] or '0') or 0, redis.call('PTTL', lease), now}
      end
      if l[1] and tonumber(l[3]) then
        local exp = tonumber(l[3])
        if exp <= now then
          return {2, l[1], lt, exp}
        end
        redis.call('HDEL', last, 'holder', 'exp')
      end
      return {0, hi}
      """);

  /** KEYS: fence, last, lease. Reply: the highest token recorded for the name, 0 if none. */
  static final LuaScript HIGHEST_TOKEN = new LuaScript("token", """
      local hi = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
      local lt = tonumber(redis.call('HGET', KEYS[2], 'token') or '0') or 0
      local ct = tonumber(redis.call('HGET', KEYS[3], 'token') or '0') or 0
      if lt > hi then hi = lt end
      if ct > hi then hi = ct end
      return hi
      """);

  /**
   * The fenced write. KEYS: resource, fence. ARGV: token (canonical decimal), mode ("set" or
   * "hset"), then the value or the field/value pairs. Tokens are compared as decimal strings, so
   * every positive {@code long} compares exactly. Reply: {@code {1, token}} written, or
   * {@code {0, highest}} rejected with nothing changed.
   */
  static final LuaScript FENCED_WRITE = new LuaScript("fencedWrite", """
      local function less(a, b)
        if #a ~= #b then return #a < #b end
        return a < b
      end
      local token = ARGV[1]
      local hi = redis.call('GET', KEYS[2])
      if hi and less(token, hi) then
        return {0, hi}
      end
      if not hi or less(hi, token) then
        redis.call('SET', KEYS[2], token)
      end
      if ARGV[2] == 'set' then
        redis.call('SET', KEYS[1], ARGV[3])
      else
        redis.call('HSET', KEYS[1], unpack(ARGV, 3))
      end
      return {1, token}
      """);

  /** KEYS: fence. Reply: {@code {highest}} as a decimal string, or an empty list if none. */
  static final LuaScript FENCED_READ = new LuaScript("fencedRead", """
      local v = redis.call('GET', KEYS[1])
      if v then return {v} end
      return {}
      """);
}
