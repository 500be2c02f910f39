-- check.lua: decide a batch of checks in one call (a single check is a batch of one), all or
-- nothing per check (and per batch in atomic mode), with usage counted in the same call.
-- Assembled after lib.lua and the algorithm fragments; mirrors apps/engine/store/decide.py.
--
-- KEYS: every counter and idempotency key the checks name, each once (numbers refer to them by index),
--   then the epoch key when a durable counter may be rebuilt.
-- ARGV: [1] now ms ('' = Redis TIME)  [2] 'i' independent | 'a' atomic  [3] usage index base ("<prefix>:ui:")
--       [4] the numbers below, packed as little-endian doubles (every one an integer below 2^53, so
--           exact; one struct.unpack instead of parsing text)
--       [5..] the strings the numbers name by ARGV index: usage bases ("<prefix>:u:{c=..}:<op>:", then
--           "s=<service>:" and "k=<key prefix>:" when the check has them; the script appends the minute),
--           unit names, lease payloads (concurrency.lua), descriptors ("<lease id>|<limits JSON>|<fingerprint>",
--           stored with the decision; the fingerprint, 16 hex digits, hashes the request's parameters)
-- numbers: <definition count> <item count>
--   then one definition per counter: <algorithm (index in CODES)> <key index> <quantity> <period ms>
--     <capacity> <shadow 0|1> <durability> <seed> <bound count> <calendar window bound ms>*
--     durability: 0 not durable; 1 what admitted checks spend is recorded (below); 2 recorded, and a
--     missing counter whose look-back began before the epoch key (the last KEYS entry) was set may have
--     lost what was spent, so ask. seed: 0 none, else the ARGV index of "<ttl ms>|<state>", the counter
--     rebuilt from its records, written while the counter is still missing (apps/engine/store/seeds.py) when
--     an item that is not a dry run names it; a counter only dry runs name is answered from it unwritten
--   then per item: <usage base> <lease payload (0 = none)> <descriptor (0 = none)> <idempotency key index
--     (0 = none; sent with a descriptor, also for a dry run, which only reads it)> <dry run 0|1>
--     <lease ttl ms (0: an allocation, held until released)> <max wait ms> <unit count> (<unit name> <cost>)* <limit count> (<definition number> <cost>)*
--     max wait: how long the item accepts to wait on a leaky bucket (leaky_bucket.lua, a shaper; a shadow one
--     is evaluated with 0).
--   then, when the store logs (absent: the numbers end after the items, nothing is logged):
--     <log count> (<item number> <limit position> <stream key index> <label> <audit 0|1>)* <instance> <maxlen>
--     label: the ARGV index of 8 strings (customer, operation, limit, algorithm, quantity, period ms, burst,
--     shadow 0|1); instance: an ARGV index. Per entry, for an item that is not a dry run nor replayed: audit 1
--     writes its decision ("allow" when the item was admitted, else "deny": an item refused spent nothing on
--     any of its limits) to the stream (XADD MAXLEN ~ <maxlen>) and adds 1 to its usage's "logged"; at
--     position 1 of an item whose lease was granted, "acquire" is written (audited or not), and the leases the
--     set drops as expired are written as "expire" (concurrency.lua). Fields: apps/engine/decision_log.py.
-- Request ids, checked before anything is decided or written: a decision stored less than 10 minutes ago
-- (by the script's clock) with the item's fingerprint is replayed, and an item repeating an earlier item's
-- id and fingerprint in the call replays that item. An id stored or repeated with another fingerprint (a
-- dry run always differs from a stored decision) makes the whole call answer {{-3, <item number>*}} and
-- write nothing. A decision stored before fingerprints (no "|<hex>" at its end) is replayed to any check
-- that is not a dry run. Dry runs store nothing.
-- Records: what the call's admitted checks spent on each durable counter is added to the usage hash of
-- the counter's first spender, under "<counter key>|<bucket start ms>" (apps/engine/durability.py). The
-- flush stores them with the usage, and a lost counter is rebuilt from them.
-- Returns {{-2, now, <definition number>, <look-back start ms>, ...}} (and writes nothing but the epoch,
-- and that only when an item is not a dry run: a call of dry runs leaves Redis as it found it) when durable
-- counters are missing: the caller rebuilds them and calls again with their seeds. Otherwise
-- one array per item: {allowed 0|1, retry_after (-1 = never) when refused | delay ms when allowed (how long the
--   caller waits before proceeding: the largest wait of its enforced shapers, 0 = go now), replayed 0|1,
--   lease expiry ms (0 = none; 2^53 - 1: an allocation), (over 0|1, remaining, reset ms)*}, or {-1, stored
--   decision} where the stored decision is "<decided at ms>|<the array, comma-separated>|<descriptor>" (kept 10 minutes).
-- Before deciding: {{-3, <item number>*}} when request ids are reused with other parameters (above).
local IDEMPOTENCY_TTL = 600000     -- by the script's clock, so a test clock and Redis expiry agree
local USAGE_TTL_MS = 172800000
local EPOCH_TTL_MS = 604800000     -- when it lapses, a new epoch only costs windows open then a re-seed
local FINGERPRINT_DIGITS = 16      -- a descriptor ends with them (plan.FINGERPRINT_LENGTH)
local MAX_WAIT_MS = 60000          -- types.MAX_WAIT_MS: a shaper's level may exceed its capacity by this much drain

local now = read_now(ARGV[1])
local atomic = ARGV[2] == 'a'
local index_base = ARGV[3]

-- N: every number of the call. struct.unpack returns them on the Lua stack (at most ~8000 fit), so a
-- long batch is unpacked 4000 at a time and copied.
local N
do
  local blob, unpack_doubles = ARGV[4], struct.unpack
  local count = #blob / 8
  if count <= 4000 then
    N = {unpack_doubles('<' .. string.rep('d', count), blob)}
  else
    N = {}
    local done, pos = 0, 1
    while done < count do
      local take = math.min(4000, count - done)
      local got = {unpack_doubles('<' .. string.rep('d', take), blob, pos)}
      for i = 1, take do N[done + i] = got[i] end
      done, pos = done + take, got[take + 1]
    end
  end
end

-- A definition's table names every field in its constructor (nil ones too), so it is made at its final
-- size: a field added later grows the table (a rehash, ~0.3 µs). The same holds for the fragments' states.
local defs, strings, durable = {}, {}, nil
local p = 3
for d = 1, N[1] do
  local code, key, bounds = CODES[N[p]], N[p + 1], N[p + 8]
  if not ALG[code] then define(code) end
  -- spent, payer: what the call's admitted checks spent on a durable counter, and the usage base of its
  -- first spender, which records it.
  local lim = {code = code, key = KEYS[key], key2 = false, q = N[p + 2], per = N[p + 3], cap = N[p + 4],
    shadow = N[p + 5] == 1, durability = N[p + 6], seed = N[p + 7], ws = nil, we = nil, spent = 0, payer = nil,
    log = false}
  if code == 'sl' then
    lim.key2 = KEYS[key + 1]
    strings[#strings + 1] = lim.key2
  elseif code ~= 'cc' then
    strings[#strings + 1] = lim.key
  end
  if bounds > 0 then
    local i, last = p + 9, p + 8 + bounds
    while i < last - 1 and N[i + 1] <= now do i = i + 1 end
    lim.ws, lim.we = N[i], N[i + 1]
  end
  if lim.durability > 0 then
    durable = durable or {}
    durable[#durable + 1] = d
  end
  defs[d] = lim
  p = p + 9 + bounds
end

-- Items are not tables: item i's numbers start at N[P[i]] (<usage base> <lease> <descriptor> <idempotency
-- key> <dry run> <lease ttl> <max wait> <unit count>, see the header), its units at P[i] + 8 and its limit count at
-- N[L[i]]. live: an item is not a dry run (only then may the call write); ids: an item has a request id.
local P, L = {}, {}
local live, ids = false, false
for i = 1, N[2] do
  local l = p + 8 + 2 * N[p + 7]
  P[i], L[i] = p, l
  if N[p + 4] == 0 then live = true end
  local idem = N[p + 3]
  if idem > 0 then
    strings[#strings + 1] = KEYS[idem]
    ids = true
  end
  p = l + 1 + 2 * N[l]
end
local item_count = N[2]
-- The log section (see the header): LOGGED[i] = the positions in N of item i's entries. A leased concurrency
-- definition knows its stream (lim.log), where concurrency.lua logs the leases it drops as expired.
local LOGGED = nil
if N[p] and N[p] > 0 then
  LOGGED = {}
  local q = p + 1
  for _ = 1, N[p] do
    local i = N[q]
    local entries = LOGGED[i]
    if not entries then
      entries = {}
      LOGGED[i] = entries
    end
    entries[#entries + 1] = q
    if N[q + 1] == 1 and N[P[i] + 1] > 0 then defs[N[L[i] + 1]].log = KEYS[N[q + 2]] end
    q = q + 5
  end
  log_setup(itos(N[q + 1]), ARGV[N[q]], now)
end
local rebuilt = durable and defs[durable[1]].durability == 2
local epoch_key = rebuilt and KEYS[#KEYS]
if epoch_key then strings[#strings + 1] = epoch_key end
prefetch(strings)

-- Request ids (see the header), before anything is decided or written. STORED[i]: the decision to replay;
-- DUP[i]: the earlier item of the call item i repeats; descriptor(i): item i's descriptor ('' = none). All
-- three only made when an item has a request id (a function is a closure made again on every call).
local STORED, DUP, descriptor
if ids then
  descriptor = function(i)
    local desc = N[P[i] + 2]
    return desc > 0 and ARGV[desc] or ''
  end
  STORED, DUP = {}, {}
  local first_of, reused, sub = {}, nil, string.sub
  for i = 1, item_count do
    local idem, dry = N[P[i] + 3], N[P[i] + 4] == 1
    if idem > 0 then
      local key, mine = KEYS[idem], sub(descriptor(i), -FINGERPRINT_DIGITS)
      local first, same = first_of[key], true
      if first then
        same, DUP[i] = sub(descriptor(first), -FINGERPRINT_DIGITS) == mine, first
      else
        local stored = fetch(key)
        if stored and now - tonumber(match(stored, '^(%d+)|')) < IDEMPOTENCY_TTL then
          local theirs = match(stored, '|(%x+)$')  -- nil: stored before fingerprints
          same, STORED[i] = theirs == mine or (theirs == nil and not dry), stored
        elseif not dry then
          first_of[key] = i
        end
      end
      if not same then
        reused = reused or {-3}
        reused[#reused + 1] = i
      end
    end
  end
  if reused then return {reused} end
end

-- Keys written for this call only (the sets of rebuilt logs only dry runs name), deleted before it returns.
local lent = nil

-- Rebuilding lost durable counters: only a store with a seeder sends the epoch key (the functions of this
-- block are made only then: every function is a closure made again on each call).
if epoch_key then
  -- Write a rebuilt counter ("<ttl ms>|<state>") unless it exists: another call may have rebuilt it first.
  -- Unless `keep` (an item that is not a dry run names it), the counter is only read: its state is kept in
  -- FETCHED, where the fragments load it from, and a log's set (read with ZRANGE) is lent.
  local function seed_write(lim, text, keep)
    local ttl_ms, state = match(text, '^(%d+)|(.*)$')
    if state == '' or fetch(lim.key2 or lim.key) then return end
    local expiry = ttl(tonumber(ttl_ms))
    if lim.code ~= 'sl' then
      if keep then call('SET', lim.key, state, 'PX', expiry) end
      FETCHED[lim.key] = state
      return
    end
    -- A log: "<time ms>:<cost>,..." oldest first, written as the set and its running sum. A set that holds
    -- entries is never lent (the fragment reads it as it is).
    if not keep and call('EXISTS', lim.key) == 1 then return end
    local sum, seq, oldest, newest = 0, 0, nil, nil
    for at, cost in string.gmatch(state, '(%d+):(%d+)') do
      seq = seq + 1
      call('ZADD', lim.key, at, itos(seq) .. ':' .. cost)
      sum, oldest, newest = sum + tonumber(cost), oldest or tonumber(at), tonumber(at)
    end
    local summary = format('%d:%d:%d:%d', sum, seq, oldest, newest)
    FETCHED[lim.key2] = summary
    call('PEXPIRE', lim.key, expiry)  -- a lent set too: gone by itself should the script fail before its DEL
    if keep then
      call('SET', lim.key2, summary, 'PX', expiry)
    else
      lent = lent or {}
      lent[#lent + 1] = lim.key
    end
  end

  -- The definitions named by an item that is not a dry run: their seeds are written.
  local function kept()
    local named = {}
    for i = 1, item_count do
      if N[P[i] + 4] == 0 then
        local l = L[i]
        for j = 1, N[l] do named[N[l + 2 * j - 1]] = true end
      end
    end
    return named
  end

  -- The earliest time whose spending still shapes the counter now (durability.lookback_start): a bucket
  -- looks back twice the time a full bucket takes to drain (durability.rebuild), a shaper's with its queue.
  local function lookback(lim)
    local code = lim.code
    if code == 'cal' then return lim.ws end
    if code == 'fw' then return now - now % lim.per end
    if code == 'swc' then return now - now % lim.per - lim.per end
    if code == 'sl' then return now - lim.per end
    return now - 2 * (ceil_div(lim.cap * lim.per, lim.q) + (code == 'lb' and MAX_WAIT_MS or 0))
  end

  local named = nil
  for _, d in ipairs(durable) do
    local lim = defs[d]
    if lim.seed > 0 then
      named = named or kept()
      seed_write(lim, ARGV[lim.seed], named[d])
    end
  end

  -- After a Redis data loss the epoch key is gone too: it is set again now, and a missing durable
  -- counter whose look-back began before it may have forgotten what its records hold. (Resetting the
  -- epoch after an outage decided elsewhere makes every counter of an open window be rebuilt once.)
  -- A call of dry runs only reads: it takes now as the epoch without setting it, which asks for the same
  -- counters, and the first call that writes sets it.
  local epoch = tonumber(fetch(epoch_key))
  if not epoch then
    epoch = now
    if live then call('SET', epoch_key, itos(now), 'PX', EPOCH_TTL_MS) end
  end
  local missing = {-2, now}
  for _, d in ipairs(durable) do
    local lim = defs[d]
    if lim.seed == 0 then
      local since = lookback(lim)
      if since < epoch and not fetch(lim.key2 or lim.key) then
        missing[#missing + 1] = d
        missing[#missing + 1] = since
      end
    end
  end
  if #missing > 2 then
    if lent then call('DEL', unpack(lent)) end
    return {missing}
  end
end

-- Every function below is a closure created again on each call: helpers used once are inlined.
local cache = {}
local needs, need_keys = {}, {}
-- Whether an admitted check spent on a durable counter (lim.spent, lim.payer hold what and whose).
local spent_any = false
-- Atomic batches: per item, its reports before it consumed (for a rollback).
local BEFORE = atomic and {} or nil

-- Atomic batches: per key, the most the batch needs at once (earlier consuming items + this one). Made
-- for atomic calls only.
local note_need
if atomic then
  note_need = function(consuming, lim, cost, wait)
    if lim.shadow or cost == 0 then return end
    local need = needs[lim.key]
    if not need then
      need = {lim = lim, running = 0, most = false}
      needs[lim.key] = need
      need_keys[#need_keys + 1] = lim.key
    end
    local most = need.running + cost
    if lim.code == 'lb' then most = ALG.lb.need(lim, most, cost, wait) end
    need.most = need.most and max(need.most, most) or most
    if consuming then need.running = need.running + cost end
  end
end

-- Decide item i into its result row (see the header); the row reports the state after the item
-- when it consumed, before it otherwise. Atomic batches keep the reports before (BEFORE[i]) too,
-- for a rollback. The row is made at its final size for up to 3 limits (growing it rehashes).
local function decide(i)
  local p, l = P[i], L[i]
  local count, dry, lease = N[l], N[p + 4] == 1, N[p + 1]
  local row
  if count == 3 then
    row = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
  elseif count == 1 then
    row = {1, 0, 0, 0, 0, 0, 0}
  else
    row = {1, 0, 0, 0}
  end
  local allowed, retry, never, shaped = true, 0, false, 0
  for j = 1, count do
    local lim, cost = defs[N[l + 2 * j - 1]], N[l + 2 * j]
    local alg, st = ALG[lim.code], cache[lim.key]
    if not st then
      st = alg.load(lim, now)
      cache[lim.key] = st
    end
    local ok, wait, delay = true, 0, nil
    -- Only a shaper reads the fifth argument (its max wait; a shadow one waits for nothing) and answers a delay.
    if cost > 0 then ok, wait, delay = alg.eval(st, lim, now, cost, not lim.shadow and N[p + 6] or 0) end
    if ok then
      row[3 * j + 2] = 0
      if delay and delay > shaped and not lim.shadow then shaped = delay end
    else
      row[3 * j + 2] = 1
      if not lim.shadow then
        allowed = false
        if wait < 0 then never = true elseif wait > retry then retry = wait end
      end
    end
    if atomic then note_need(not dry and (lim.code ~= 'cc' or (j == 1 and lease > 0)), lim, cost, N[p + 6]) end
  end
  if never then retry = -1 end
  if allowed then row[2] = shaped else row[2], row[1] = retry, 0 end
  local consume = allowed and not dry
  if atomic or not consume then
    for j = 1, count do
      local lim = defs[N[l + 2 * j - 1]]
      row[3 * j + 3], row[3 * j + 4] = ALG[lim.code].report(cache[lim.key], lim, now)
    end
    if consume then
      local before = {}
      for n = 5, 3 * count + 4 do before[n] = row[n] end
      BEFORE[i] = before
    end
  end
  if consume then
    for j = 1, count do
      local d, cost = N[l + 2 * j - 1], N[l + 2 * j]
      local lim = defs[d]
      local alg, st = ALG[lim.code], cache[lim.key]
      local leased = lease > 0 and (j == 1 or lim.code == 'st')  -- session_time limits hold the lease too
      if cost > 0 and (row[3 * j + 2] == 0 or leased) then
        alg.apply(st, lim, now, cost, leased and {lease = ARGV[lease], ttl = N[p + 5]} or nil)
        st.lim = lim  -- the state is saved with the parameters of its last change, as in decide.py
        if lim.durability > 0 then
          -- What the call spends on the counter, recorded once with the usage of its first spender.
          if lim.spent == 0 then lim.payer = ARGV[N[p]] end
          lim.spent = lim.spent + cost
          spent_any = true
        end
      end
      row[3 * j + 3], row[3 * j + 4] = alg.report(st, lim, now)
    end
    if lease > 0 then row[4] = N[p + 5] > 0 and now + N[p + 5] or 9007199254740991 end  -- 0: an allocation
  end
  return row
end

-- Decide every item in order (replays and in-batch repeats take no part). out[i] is the item's
-- row, or {-1, stored} for a replay.
local out = {}
local rolled_back = false
for i = 1, item_count do
  if ids and DUP[i] then
    out[i] = false
  elseif ids and STORED[i] then
    out[i] = {-1, STORED[i]}
  else
    local row = decide(i)
    out[i] = row
    if row[1] == 0 then rolled_back = atomic end
  end
end

if rolled_back then
  -- Every item is rejected, with the earliest delay after which the whole batch would pass.
  local retry_all = 0
  for _, key in ipairs(need_keys) do
    local need = needs[key]
    local alg = ALG[need.lim.code]
    local retry
    if need.lim.code == 'lb' then
      retry = alg.batch_retry(alg.load(need.lim, now), need.lim, need.most)
    else
      retry = select(2, alg.eval(alg.load(need.lim, now), need.lim, now, need.most))
    end
    if retry < 0 then
      retry_all = -1
      break
    end
    retry_all = max(retry_all, retry)
  end
  for i = 1, item_count do
    local row = out[i]
    if row and row[1] ~= -1 then
      row[1], row[2], row[4] = 0, retry_all, 0
      local before = BEFORE[i]
      if before then
        for n = 5, #row do row[n] = before[n] end
      end
    end
  end
else
  for _, st in pairs(cache) do
    if st.dirty then ALG[st.lim.code].save(st, st.lim, now) end
  end
end

-- Item i's log entries (see the header), once its outcome is final; how many decisions it logged. Made only
-- for a call that logs.
local log_item
if LOGGED then
  log_item = function(i, row)
    local p, l, logged = P[i], L[i], 0
    local lease = N[p + 1]
    for _, q in ipairs(LOGGED[i]) do
      local j, stream, label = N[q + 1], KEYS[N[q + 2]], N[q + 3]
      local lim, cost = defs[N[l + 2 * j - 1]], itos(N[l + 2 * j])
      local code = lim.code
      local window = code == 'fw' and itos(now - now % lim.per) or code == 'cal' and itos(lim.ws) or '0'
      local function add(event, member, expires)
        LOG.add(stream, 'e', event, 'c', ARGV[label], 'o', ARGV[label + 1], 'l', ARGV[label + 2],
          'a', ARGV[label + 3], 'k', lim.key, 'n', cost, 'q', ARGV[label + 4], 'p', ARGV[label + 5],
          'b', ARGV[label + 6], 'w', window, 'g', ARGV[label + 7], 'm', 'exact', 'i', LOG.instance,
          's', member, 'x', expires)
      end
      if N[q + 4] == 1 then
        logged = logged + 1
        add(row[1] == 1 and 'allow' or 'deny', '', '0')
      end
      if j == 1 and lease > 0 and row[1] == 1 and row[4] > 0 then
        add('acquire', match(ARGV[lease], '^[^\n]*'), itos(row[4]))
      end
    end
    return logged
  end
end

-- Usage per usage base: TALLY[base] = {allowed, denied, shadow_denied, logged}, UNITS[base] = {['cost:<unit>'] =
-- amount} (made only for items with units), in order of first use; and the decisions to remember.
local TALLY, UNITS, bases = {}, nil, {}
for i = 1, item_count do
  local row, p = out[i], P[i]
  if not row then
    row = {}
    for n, value in ipairs(out[DUP[i]]) do row[n] = value end
    row[3] = 1
    out[i] = row
  elseif row[1] ~= -1 and N[p + 4] == 0 then
    local base = ARGV[N[p]]
    local tally = TALLY[base]
    if not tally then
      tally = {0, 0, 0, 0}
      TALLY[base] = tally
      bases[#bases + 1] = base
    end
    if row[1] == 0 then
      tally[2] = tally[2] + 1
    else
      tally[1] = tally[1] + 1
      local l = L[i]
      for j = 1, N[l] do
        if row[3 * j + 2] == 1 and defs[N[l + 2 * j - 1]].shadow then
          tally[3] = tally[3] + 1
          break
        end
      end
      local units = N[p + 7]
      if units > 0 then
        UNITS = UNITS or {}
        local costs = UNITS[base]
        if not costs then
          costs = {}
          UNITS[base] = costs
        end
        for u = p + 8, p + 6 + 2 * units, 2 do
          local field = 'cost:' .. ARGV[N[u]]
          costs[field] = (costs[field] or 0) + N[u + 1]
        end
      end
    end
    if LOGGED and LOGGED[i] then tally[4] = tally[4] + log_item(i, row) end
    local idem = N[p + 3]
    if idem > 0 then
      local fields = {}
      for n = 1, #row do fields[n] = itos(row[n]) end
      local stored = itos(now) .. '|' .. table.concat(fields, ',') .. '|' .. descriptor(i)
      call('SET', KEYS[idem], stored, 'PX', ttl(IDEMPOTENCY_TTL))
    end
  end
end

-- One HINCRBY per usage field that moved. An amount of 1 (the usual one) is passed as the string '1':
-- a Lua number argument costs redis.call a float-to-text conversion (~2.4k instructions, a third of a
-- HINCRBY). Records: what the call spent on each durable counter, with the usage of the counter's first
-- spender, under "<counter key>|<bucket start>" (durability.record_bucket); a bucket's text is made once.
local minute = itos(floor(now / 60000))
local usage_keys, key_of = {}, {}
for n, base in ipairs(bases) do
  local key, tally = base .. minute, TALLY[base]
  usage_keys[n], key_of[base] = key, key
  local allowed, denied, shadow_denied = tally[1], tally[2], tally[3]
  if allowed > 0 then call('HINCRBY', key, 'allowed', allowed == 1 and '1' or allowed) end
  if denied > 0 then call('HINCRBY', key, 'denied', denied == 1 and '1' or denied) end
  if shadow_denied > 0 then call('HINCRBY', key, 'shadow_denied', shadow_denied == 1 and '1' or shadow_denied) end
  if tally[4] > 0 then call('HINCRBY', key, 'logged', itos(tally[4])) end
  local costs = UNITS and UNITS[base]
  if costs then
    for field, amount in pairs(costs) do call('HINCRBY', key, field, amount) end
  end
end
if spent_any and not rolled_back then
  local bucket_texts, minute_start = {}, now - now % 60000
  for _, d in ipairs(durable) do
    local lim = defs[d]
    local amount = lim.spent
    if amount > 0 then
      local code, start = lim.code, minute_start
      if code == 'cal' then
        start = lim.ws
      elseif code == 'fw' or code == 'swc' then
        start = now - now % lim.per
      end
      local text = bucket_texts[start]
      if not text then
        text = '|' .. itos(start)
        bucket_texts[start] = text
      end
      call('HINCRBY', key_of[lim.payer], lim.key .. text, amount == 1 and '1' or amount)
    end
  end
end

-- One SADD per 1000 usage keys; when it added any, every usage key of the call gets its TTL again
-- (a key indexed before keeps at least the TTL it had: they all end two days after this minute).
local index = index_base .. minute
for first = 1, #usage_keys, 1000 do
  local last = math.min(first + 999, #usage_keys)
  if call('SADD', index, unpack(usage_keys, first, last)) > 0 then
    for n = first, last do call('PEXPIRE', usage_keys[n], USAGE_TTL_MS) end
    call('PEXPIRE', index, USAGE_TTL_MS)
  end
end
if lent then call('DEL', unpack(lent)) end
return out
