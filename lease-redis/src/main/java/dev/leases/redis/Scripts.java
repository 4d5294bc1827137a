package dev.leases.redis;

/**
 * The Lua scripts. Each runs atomically on the primary that owns the lease's slot; every key a
 * script touches is passed in KEYS and shares one hash tag ({@link KeyLayout}). Time comes from the
 * server's {@code TIME}, never from the client. Numbers written back to Redis go through
 * {@code string.format('%d')} so that they are stored as plain integers.
 *
 * <p>Redis does not roll back a script that fails halfway: every command before the failing one
 * stays applied. So each script first checks the type of every key it touches ({@link #GUARD}) and
 * only then writes; a key of the wrong type (written by something else) stops the script with
 * nothing changed, reported by {@link LuaScript} as an {@link IllegalStateException}.
 */
final class Scripts {

  private Scripts() {}

  /**
   * Lua prelude: {@code foreign(key, want)} is nil when {@code key} is absent or of type
   * {@code want}, else an error reply {@code <FOREIGN_KEY> <type> <want> <key>} for the script to
   * return before any write.
   */
  private static final String GUARD = """
      local function foreign(key, want)
        local t = redis.call('TYPE', key)['ok']
        if t ~= 'none' and t ~= want then
          return redis.error_reply('%s ' .. t .. ' ' .. want .. ' ' .. key)
        end
        return nil
      end
      """.formatted(LuaScript.FOREIGN_KEY);

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
  static final LuaScript ACQUIRE_OR_RENEW = new LuaScript("acquireOrRenew", GUARD + """
      local lease, fence, last = KEYS[1], KEYS[2], KEYS[3]
      local holder, ttl = ARGV[1], tonumber(ARGV[2])
      local bad = foreign(lease, 'hash') or foreign(fence, 'string') or foreign(last, 'hash')
      if bad then return bad end
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
  static final LuaScript RELEASE = new LuaScript("release", GUARD + """
      local bad = foreign(KEYS[1], 'hash') or foreign(KEYS[2], 'hash')
      if bad then return bad end
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
  static final LuaScript INSPECT = new LuaScript("inspect", GUARD + """
      local lease, fence, last = KEYS[1], KEYS[2], KEYS[3]
      local bad = foreign(lease, 'hash') or foreign(fence, 'string') or foreign(last, 'hash')
      if bad then return bad end
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
  static final LuaScript HIGHEST_TOKEN = new LuaScript("token", GUARD + """
      local bad = foreign(KEYS[1], 'string') or foreign(KEYS[2], 'hash') or foreign(KEYS[3], 'hash')
      if bad then return bad end
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
   *
   * <p>Validate, then write the resource, then raise the fence: an {@code HSET} onto a key of
   * another type is refused by the guard, and should the resource write fail anyway the fence has
   * not moved yet. Raising it last cannot fail ({@code SET} of a string key; Redis refuses writes
   * for lack of memory only at a script's first write), nor can the second and later chunks of a
   * wide {@code HSET} (same key, already known to be a hash).
   */
  static final LuaScript FENCED_WRITE = new LuaScript("fencedWrite", GUARD + """
      local function less(a, b)
        if #a ~= #b then return #a < #b end
        return a < b
      end
      local token, mode = ARGV[1], ARGV[2]
      local bad = foreign(KEYS[2], 'string') or (mode == 'hset' and foreign(KEYS[1], 'hash'))
      if bad then return bad end
      local hi = redis.call('GET', KEYS[2])
      if hi and less(token, hi) then
        return {0, hi}
      end
      if mode == 'set' then
        redis.call('SET', KEYS[1], ARGV[3])
      else
        -- unpack() takes about 8000 values at most: write the pairs 500 at a time
        for i = 3, #ARGV, 1000 do
          redis.call('HSET', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
        end
      end
      if not hi or less(hi, token) then
        redis.call('SET', KEYS[2], token)
      end
      return {1, token}
      """);

  /** KEYS: fence. Reply: {@code {highest}} as a decimal string, or an empty list if none. */
  static final LuaScript FENCED_READ = new LuaScript("fencedRead", GUARD + """
      local bad = foreign(KEYS[1], 'string')
      if bad then return bad end
      local v = redis.call('GET', KEYS[1])
      if v then return {v} end
      return {}
      """);
}
