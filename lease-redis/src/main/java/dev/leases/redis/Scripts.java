package dev.leases.redis;

/**
 * The Lua scripts. Each runs atomically on the primary that owns the lease's slot; every key a
 * script touches is passed in KEYS and shares one hash tag ({@link KeyLayout}). Time comes from the
 * server's {@code TIME}, never from the client. Numbers computed in Lua and written back go
 * through {@code string.format('%d')} so that they are stored as plain integers (a renewal copies
 * the token's text as the lease holds it).
 *
 * <p>Redis does not roll back a script that fails halfway: every command before the failing one
 * stays applied. So each script first checks the type of every key it touches ({@link #GUARD}) and
 * only then writes; a key of the wrong type (written by something else) stops the script with
 * nothing changed, reported by {@link LuaScript} as an {@link IllegalStateException}. Likewise
 * each writing script first asks Redis whether the caller's ACL allows every write it may make
 * ({@link #ACL}); if not, it stops with nothing changed, reported as a
 * {@link RedisAccessDeniedException}.
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
   * Lua prelude: {@code denied(command, key, ...)} is nil when the caller's ACL lets it run
   * {@code command} with these arguments ({@code redis.acl_check_cmd}, Redis 7), else the error
   * text {@code <DENIED> <command> <key>} for the script to return before any write. Every writing
   * script checks all it may write first, so that a user without write permission (an observer)
   * is told so even when the script would have written nothing (a lease held by another), and a
   * refusal never leaves a script half-written. A script checks each key once and each command
   * at least once (ACL rules grant commands and key patterns apart; about a microsecond a check):
   * exact for one set of permissions ({@link RedisAcl}'s rules), not under ACL selectors, where one
   * selector may grant a check's command and another the command the script then runs.
   */
  private static final String ACL = """
      local function denied(cmd, key, ...)
        if redis.acl_check_cmd(cmd, key, ...) then return nil end
        return '%s ' .. cmd .. ' ' .. key
      end
      """.formatted(LuaScript.DENIED);

  /**
   * Lua prelude: {@code less(a, b)} compares two canonical positive decimals (no sign, no leading
   * zeros) exactly, as strings, so that every {@code long} token compares right (Lua numbers are
   * doubles, exact only to 2^53).
   */
  private static final String LESS = """
      local function less(a, b)
        if #a ~= #b then return #a < #b end
        return a < b
      end
      """;

  /**
   * Acquire-or-renew for one or many names of one slot; the single call is this script with one
   * name, so both follow one body. KEYS: lease, fence, last of each name, in that order (3 per
   * name). ARGV: holder, ttl in ms. Reply: the expiry in server ms of every grant of this script,
   * then one entry per name, in KEYS order:
   * <ul>
   *   <li>{@code token} (an integer) granted or renewed, expiring at the reply's expiry;
   *   <li>{@code {0, holder, token, expiresAtMs, pttlMs}} another holder has an unexpired lease, as
   *       read in this script: its lease key's {@code PTTL}, and the expiry as this script's
   *       {@code TIME} plus that (so at most the script's own run time early, never late);
   *   <li>{@code {2, error}} a key of the name holds the wrong type ({@link #GUARD}'s error text):
   *       nothing of this name was changed.
   * </ul>
   *
   * <p>Same holder with a live lease key: same token, expiry moved to now + ttl. No lease key (never
   * granted, released, expired — Redis removed it — or deleted out of band): a new token, strictly
   * above the counter, above the last tenure's token, and at least the server's time in ms, so that a
   * restarted non-persistent server (counter lost) still issues larger tokens. Each name's keys are
   * type-checked before anything of that name is written; names are independent, so a bad name
   * never leaves another half-written. {@code TIME} is read once: every name of the script is judged
   * at that instant, and expiries are computed from it.
   *
   * <p>The type checks cost a command each, so the common case, a renewal (most of a
   * {@link dev.leases.leader.LeaseGroup}'s batch), lets its commands prove the types of the keys it
   * touches: the lease's {@code HMGET} and the last tenure's {@code HSET} fail on a key of the
   * wrong type with nothing written ({@code redis.pcall}), which then answers as the guard would.
   * Any other failure of those two stops the script as {@code redis.call} would. The fence, which
   * a renewal neither reads nor writes, is not checked by a renewal: a foreign fence key does not
   * make a holder stand down from a lease whose token stays valid; the next grant of the name
   * refuses over it (and {@code inspect} and {@code token} report it).
   *
   * <p>Each write command is asked about once (on the first name's keys); whether a name's keys
   * may be written is asked once for its three ({@code DEL} names them all, and key patterns grant
   * writes to every write command alike), and only if that is refused key by key, with the
   * commands the script runs, to name the one refused. Together with the reply's one expiry
   * instead of a table per grant, no fence check and the token copied as text (only when it is a
   * canonical decimal below 10^15, exact as a Lua number; other text, written by something else,
   * takes the full path, which refuses), this takes a renewal from about 56,000 to 35,000 server
   * instructions per name (callgrind, Redis 7.0, batches of 1,000).
   */
  static final LuaScript ACQUIRE_OR_RENEW = new LuaScript("acquireOrRenew", GUARD + ACL + """
      local no = #KEYS > 0 and (denied('INCR', KEYS[2]) or denied('SET', KEYS[2], '1')
        or denied('HSET', KEYS[1], 'holder', '') or denied('PEXPIREAT', KEYS[1], '1'))
      for i = 1, #KEYS, 3 do
        no = no or denied('DEL', KEYS[i], KEYS[i + 1], KEYS[i + 2])
          and (denied('SET', KEYS[i + 1], '1') or denied('HSET', KEYS[i], 'holder', '')
            or denied('HSET', KEYS[i + 2], 'holder', ''))
        if no then return redis.error_reply(no) end
      end
      local holder, ttl = ARGV[1], tonumber(ARGV[2])
      local t = redis.call('TIME')
      local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      local exp = now + ttl
      local sexp = string.format('%d', exp)
      local function grant(lease, fence, last)
        local cur = redis.pcall('HMGET', lease, 'holder', 'token')
        if cur['err'] then
          local bad = foreign(lease, 'hash')
          if bad then return {2, bad['err']} end
          error(cur)
        end
        local text = cur[2]
        if cur[1] == holder and text and #text <= 15 and string.find(text, '^[1-9]%d*$') then
          local token = tonumber(cur[2])
          local w = redis.pcall('HSET', last, 'holder', holder, 'token', cur[2], 'exp', sexp)
          if type(w) == 'table' then
            local bad = foreign(last, 'hash')
            if bad then return {2, bad['err']} end
            error(w)
          end
          redis.call('PEXPIREAT', lease, sexp)
          return token
        end
        local bad = foreign(fence, 'string') or foreign(last, 'hash')
        if bad then return {2, bad['err']} end
        local token
        if cur[1] then
          local pttl = redis.call('PTTL', lease)
          return {0, cur[1], tonumber(cur[2] or '') or 0, now + pttl, pttl}
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
        redis.call('PEXPIREAT', lease, sexp)
        redis.call('HSET', last, 'holder', holder, 'token', string.format('%d', token), 'exp', sexp)
        return token
      end
      local out = {exp}
      for i = 1, #KEYS, 3 do
        out[#out + 1] = grant(KEYS[i], KEYS[i + 1], KEYS[i + 2])
      end
      return out
      """);

  /**
   * Release for one or many names of one slot (the single call is this script with one name).
   * KEYS: lease, last of each name (2 per name). ARGV: holder, channel, then each name, in KEYS
   * order. Reply: one entry per name: 1 if {@code holder} had a live lease (now deleted, the release
   * announced on the channel with the name as message), 0 if not, or {@link #GUARD}'s error text if
   * a key of the name holds the wrong type (nothing of that name changed). The counter is never
   * touched; the last tenure keeps its token but loses its holder, so that inspection says FREE.
   */
  static final LuaScript RELEASE = new LuaScript("release", GUARD + ACL + """
      local holder, channel = ARGV[1], ARGV[2]
      local no = denied('PUBLISH', channel, '')
      for i = 1, #KEYS, 2 do
        no = no or denied('DEL', KEYS[i]) or denied('HDEL', KEYS[i + 1], 'holder', 'exp')
      end
      if no then return redis.error_reply(no) end
      local out = {}
      for i = 1, #KEYS, 2 do
        local lease, last = KEYS[i], KEYS[i + 1]
        local bad = foreign(lease, 'hash') or foreign(last, 'hash')
        if bad then
          out[#out + 1] = bad['err']
        elseif redis.call('HGET', lease, 'holder') == holder then
          redis.call('DEL', lease)
          redis.call('HDEL', last, 'holder', 'exp')
          redis.call('PUBLISH', channel, ARGV[2 + (i + 1) / 2])
          out[#out + 1] = 1
        else
          out[#out + 1] = 0
        end
      end
      return out
      """);

  /**
   * KEYS: lease, fence, last. Reply:
   * {@code {1, holder, token, pttlMs, nowMs}} held;
   * {@code {2, holder, token, expiredAtMs}} expired and not taken;
   * {@code {0, bound}} free: the highest token recorded, or without any record (never granted, or
   * the server lost its memory) the server's time in ms minus one, see {@link #HIGHEST_TOKEN}.
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
        if redis.acl_check_cmd('HDEL', last, 'holder', 'exp') then
          redis.call('HDEL', last, 'holder', 'exp')
        end
      end
      if hi <= 0 then hi = now - 1 end
      return {0, hi}
      """);

  /**
   * KEYS: fence, last, lease. Reply: the highest token recorded for the name; without any record
   * (never granted, or a server without persistence restarted) the server's time in ms minus one.
   * That is a bound too: every token was clamped up to the server's time when issued, and every
   * later grant is clamped up to a later time, so it is larger. (Caveats as for the clamp: the
   * server's clock must not step back, and a name granted more than 1000 times per second runs its
   * counter ahead of the clock.)
   */
  static final LuaScript HIGHEST_TOKEN = new LuaScript("token", GUARD + """
      local bad = foreign(KEYS[1], 'string') or foreign(KEYS[2], 'hash') or foreign(KEYS[3], 'hash')
      if bad then return bad end
      local hi = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
      local lt = tonumber(redis.call('HGET', KEYS[2], 'token') or '0') or 0
      local ct = tonumber(redis.call('HGET', KEYS[3], 'token') or '0') or 0
      if lt > hi then hi = lt end
      if ct > hi then hi = ct end
      if hi <= 0 then
        local t = redis.call('TIME')
        hi = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - 1
      end
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
  static final LuaScript FENCED_WRITE = new LuaScript("fencedWrite", GUARD + ACL + LESS + """
      local token, mode = ARGV[1], ARGV[2]
      local no = denied('SET', KEYS[2], token)
        or (mode == 'set' and denied('SET', KEYS[1], ARGV[3]))
        or (mode == 'hset' and denied('HSET', KEYS[1], ARGV[3], ARGV[4]))
      if no then return redis.error_reply(no) end
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

  // --- the run ledger (RedisRunLedger) -------------------------------------------------------

  /**
   * Lua prelude of the ledger scripts. An attempt {@code id} of a job is the fields
   * {@code <id>:run|token|holder|status|started|finished|failure} of the job's attempts hash;
   * {@code record(attempts, id)} replies them as {@code {id, run, token, holder, status, started,
   * finished, failure}} (absent fields nil), or nil if the attempt has no status.
   * {@code now_ms()} is the server's {@code TIME} in ms as a decimal; {@code last_id(seq,
   * attempts)} is the last attempt id: the counter, or, if it was deleted, the highest id in the
   * hash.
   */
  private static final String LEDGER = GUARD + ACL + LESS + """
      local FIELDS = {'run', 'token', 'holder', 'status', 'started', 'finished', 'failure'}
      local function record(attempts, id)
        local names = {}
        for i, n in ipairs(FIELDS) do names[i] = id .. ':' .. n end
        local v = redis.call('HMGET', attempts, unpack(names))
        if not v[4] then return nil end
        return {id, v[1], v[2], v[3], v[4], v[5], v[6], v[7]}
      end
      local function now_ms()
        local t = redis.call('TIME')
        return string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
      end
      local function last_id(seq, attempts)
        local v = tonumber(redis.call('GET', seq) or '')
        if v then return v end
        local hi = 0
        for _, f in ipairs(redis.call('HKEYS', attempts)) do
          local n = tonumber(string.match(f, '^(%d+):status$') or '')
          if n and n > hi then hi = n end
        end
        return hi
      end
      """;

  /**
   * KEYS: fence, seq, attempts, done. ARGV: token, run, holder. Reply: {@code {0, fence}} refused
   * (fence above token, nothing written); {@code {1, record}} a new STARTED attempt; {@code {2,
   * record}} the run's completion; {@code {3, id}} the completion names attempt {@code id} whose
   * fields are gone (nothing written). The fence is raised to the token before either record
   * reply, in the same script.
   */
  static final LuaScript LEDGER_BEGIN = new LuaScript("ledgerBegin", LEDGER + """
      local fence, seq, attempts, done = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
      local token, run, holder = ARGV[1], ARGV[2], ARGV[3]
      local no = denied('SET', fence, token) or denied('SET', seq, '1')
        or denied('HSET', attempts, 'f', 'v')
      if no then return redis.error_reply(no) end
      local bad = foreign(fence, 'string') or foreign(seq, 'string') or foreign(attempts, 'hash')
        or foreign(done, 'hash')
      if bad then return bad end
      local hi = redis.call('GET', fence)
      if hi and less(token, hi) then return {0, hi} end
      local doneId = redis.call('HGET', done, run)
      local rec
      if doneId then
        rec = record(attempts, doneId)
        if not rec then return {3, doneId} end
      end
      if not hi or less(hi, token) then redis.call('SET', fence, token) end
      if rec then return {2, rec} end
      local n = last_id(seq, attempts) + 1
      while redis.call('HEXISTS', attempts, string.format('%d', n) .. ':status') == 1 do
        n = n + 1
      end
      local id = string.format('%d', n)
      redis.call('SET', seq, id)
      redis.call('HSET', attempts, id .. ':run', run, id .. ':token', token, id .. ':holder', holder,
        id .. ':status', 'STARTED', id .. ':started', now_ms())
      return {1, record(attempts, id)}
      """);

  /**
   * KEYS: fence, attempts, done. ARGV: token, run, attempt id. Reply: {@code {0, fence}} refused
   * (fence above token, nothing written); {@code {1, record}} this attempt completed now;
   * {@code {2, record}} another attempt had completed the run (nothing written); {@code {3, id}}
   * as for begin; {@code {4, status}} the attempt is not a STARTED attempt of this run and token
   * (nothing written).
   */
  static final LuaScript LEDGER_COMPLETE = new LuaScript("ledgerComplete", LEDGER + """
      local fence, attempts, done = KEYS[1], KEYS[2], KEYS[3]
      local token, run, id = ARGV[1], ARGV[2], ARGV[3]
      local no = denied('SET', fence, token) or denied('HSET', done, run, id)
        or denied('HSET', attempts, 'f', 'v')
      if no then return redis.error_reply(no) end
      local bad = foreign(fence, 'string') or foreign(attempts, 'hash') or foreign(done, 'hash')
      if bad then return bad end
      local hi = redis.call('GET', fence)
      if hi and less(token, hi) then return {0, hi} end
      local doneId = redis.call('HGET', done, run)
      if doneId then
        local rec = record(attempts, doneId)
        if not rec then return {3, doneId} end
        return {2, rec}
      end
      local mine = redis.call('HMGET', attempts, id .. ':run', id .. ':token', id .. ':status')
      if mine[3] ~= 'STARTED' or mine[1] ~= run or mine[2] ~= token then
        return {4, mine[3] or 'absent'}
      end
      if not hi or less(hi, token) then redis.call('SET', fence, token) end
      redis.call('HSET', done, run, id)
      redis.call('HSET', attempts, id .. ':status', 'COMPLETED', id .. ':finished', now_ms())
      return {1, record(attempts, id)}
      """);

  /**
   * KEYS: attempts. ARGV: attempt id, run, token, failure. Reply: {@code {1, record}} as it now
   * stands (FAILED now if it was STARTED, else unchanged); {@code {0}} no such attempt of this run
   * and token.
   */
  static final LuaScript LEDGER_FAIL = new LuaScript("ledgerFail", LEDGER + """
      local attempts = KEYS[1]
      local id, run, token, failure = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
      local no = denied('HSET', attempts, 'f', 'v')
      if no then return redis.error_reply(no) end
      local bad = foreign(attempts, 'hash')
      if bad then return bad end
      local mine = redis.call('HMGET', attempts, id .. ':run', id .. ':token', id .. ':status')
      if not mine[3] or mine[1] ~= run or mine[2] ~= token then return {0} end
      if mine[3] == 'STARTED' then
        redis.call('HSET', attempts, id .. ':status', 'FAILED', id .. ':finished', now_ms(),
          id .. ':failure', failure)
      end
      return {1, record(attempts, id)}
      """);

  /**
   * KEYS: attempts, done. ARGV: run. Reply: {@code {0}} not completed; {@code {2, record}} its
   * completion; {@code {3, id}} as for begin. Writes nothing.
   */
  static final LuaScript LEDGER_COMPLETION = new LuaScript("ledgerCompletion", LEDGER + """
      local attempts, done = KEYS[1], KEYS[2]
      local bad = foreign(attempts, 'hash') or foreign(done, 'hash')
      if bad then return bad end
      local doneId = redis.call('HGET', done, ARGV[1])
      if not doneId then return {0} end
      local rec = record(attempts, doneId)
      if not rec then return {3, doneId} end
      return {2, rec}
      """);

  /**
   * KEYS: seq, attempts. ARGV: limit. Reply: up to {@code limit} records, highest id first. Writes
   * nothing.
   */
  static final LuaScript LEDGER_HISTORY = new LuaScript("ledgerHistory", LEDGER + """
      local seq, attempts = KEYS[1], KEYS[2]
      local bad = foreign(seq, 'string') or foreign(attempts, 'hash')
      if bad then return bad end
      local out = {}
      if redis.call('EXISTS', attempts) == 0 then return out end
      local limit = tonumber(ARGV[1])
      local n = last_id(seq, attempts)
      while n > 0 and #out < limit do
        local rec = record(attempts, string.format('%d', n))
        if rec then out[#out + 1] = rec end
        n = n - 1
      end
      return out
      """);
}
