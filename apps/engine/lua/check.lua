-- check.lua: decide a batch of checks in one call (a single check is a batch of one), all or
-- nothing per check (and per batch in atomic mode). Usage and durable records are not counted here: the process
-- that called tallies them from the answer (apps/engine/decision_usage.py), at the `now` the answer ends with.
-- Assembled after lib.lua and the algorithm fragments (store/script/assembly.py), which puts in place of each field
-- offset (DEF_*, ITEM_*, UNIT_*, LIMIT_*, ENTRY_*, TAIL_*, LABEL_*) and answer code (REUSED, ...) its value from
-- apps/engine/store/script/check_fields.py; mirrors apps/engine/store/decide.py. `manage.py decode_check` prints a
-- recorded call's arguments by name, and a Redis error names the line of this file.
--
-- Phases, run in this order by the main body at the end of the file:
--   read_call      ARGV and the numbers: definitions, items, the log section; one MGET of the keys read
--   request_ids    calls with request ids: stored decisions to replay, repeats within the call; answers
--                  {{REUSED, <item number>*}} when an id comes back with other parameters
--   seeds          calls that may rebuild durable counters: rebuilt counters written, the epoch set; answers
--                  {{NEEDS_SEED, ...}} when counters are still missing
--   evaluate       every item decided in order into its row (decide)
--   spend          the counters saved, or an atomic batch refused whole
--   log_decisions  the decision log entries of the items that log
--   answer         calls with request ids: repeats answered, decisions kept under their ids
-- Every function is a closure made again on each call (the phases cost a single check ~7% of its Redis
-- instructions, bench/RESULTS.md "check.lua readable"): a phase's helpers are inlined or made inside it, so only
-- the calls that run it pay for them, and the phases share their state in one table (C) to keep upvalues few.
--
-- KEYS, ARGV and the numbers: apps/engine/store/script/check_fields.py. In short, ARGV: [1] now ms ('' = Redis TIME)
-- [2] 'i' independent | 'a' atomic | 'l' look (atomic, then refused whole whatever it finds: a Redis Cluster
-- slot of an atomic batch another slot refused, store/atomic_slots.py) [3] usage index base (a lease's session
-- time, concurrency.lua) [4] the numbers, a JSON array of integers: the
-- definitions (one per counter), the items (each with its units and its limits: definition number and cost),
-- the log section [5..] the strings the numbers name by ARGV index.
--   durability: NOT_DURABLE; RECORDED: what admitted checks spend is recorded (by the caller); REBUILT: recorded (a
--     lease set: its allocations are kept by the caller, seed "0|<member>,..." written with no TTL), and a
--     missing counter whose look-back began before the epoch key (the last KEYS entry) was set may have lost
--     what was spent, so ask, unless the warm mark (the KEYS entry before it, keys.py) says the epoch's warm-up
--     rebuilt every counter of an open window: then a missing counter is a new one. seed: 0 none, else the ARGV index of "<ttl ms>|<state>", the counter rebuilt from
--     its records, written while the counter is still missing (apps/engine/store/seeds.py) when an item that is
--     not a dry run names it; a counter only dry runs name is answered from it unwritten.
--   max wait: how long the item accepts to wait on a leaky bucket (leaky_bucket.lua, a shaper; a shadow one is
--     evaluated with 0). lease ttl 0: an allocation, held until released.
--   log entries, for an item that is not a dry run nor replayed: audit 1 writes its decision ("allow" when the
--     item was admitted, else "deny": an item refused spent nothing on any of its limits) to the stream (XADD
--     MAXLEN ~ <maxlen>; the caller's tally adds 1 to its usage's "logged"); at position 1 of an item whose lease was granted,
--     "acquire" is written (audited or not), and the leases the set drops as expired are written as "expire"
--     (the lease set's fragment). Fields: apps/engine/decision_log.py.
-- Request ids, checked before anything is decided or written: a decision stored less than 10 minutes ago
-- (by the script's clock) with the item's fingerprint is replayed, and an item repeating an earlier item's
-- id and fingerprint in the call replays that item. An id stored or repeated with another fingerprint (a
-- dry run always differs from a stored decision) makes the whole call answer {{REUSED, <item number>*}} and
-- write nothing. A decision stored before fingerprints (no "|<hex>" at its end) is replayed to any check
-- that is not a dry run. Dry runs store nothing.
-- Records: what admitted checks spent on each durable counter is tallied by the caller from the answer, in the
-- buckets of the answer's now (apps/engine/durability.py record_bucket); a lost counter is rebuilt from them.
-- The items' usage fields and units are still sent (script/args.py) but no longer read here.
-- Returns {{NEEDS_SEED, now, <definition number>, <look-back start ms>, ...}} (and writes nothing but the epoch,
-- and that only when an item is not a dry run: a call of dry runs leaves Redis as it found it) when durable
-- counters are missing: the caller rebuilds them and calls again with their seeds. Otherwise
-- one array per item: {allowed 0|1, retry_after (-1 = never) when refused | delay ms when allowed (how long the
--   caller waits before proceeding: the largest wait of its enforced shapers, 0 = go now), replayed 0|1,
--   lease expiry ms (0 = none; 2^53 - 1: an allocation), (over 0|1, remaining, reset ms)*}, or {REPLAYED, stored
--   decision} where the stored decision is "<decided at ms>|<the array, comma-separated>|<descriptor>" (kept 10
--   minutes). After the items' arrays comes the script's now (ms), an integer: the caller tallies usage in its
--   minute and records in its buckets (a NEEDS_SEED or REUSED answer has none: nothing was decided).
-- IDEMPOTENCY_TTL_MS, USAGE_TTL_MS, EPOCH_TTL_MS, MAX_WAIT_MS, FINGERPRINT_LENGTH: put in place from Python
-- (check_fields.SHARED).
local HELD = 9007199254740991      -- 2^53 - 1: the lease expiry of an allocation, held until released

-- What the phases share, in one table: every phase is a closure made on each call, and each local of the main
-- chunk it uses is an upvalue found again each time (as 25 shared locals, they cost a check ~10% more).
local C = {
  now = 0, atomic = false, N = false,       -- the script's time; atomic mode; every number of the call
  look = false,                             -- look mode: atomic, and refused whole (saves nothing)
  defs = {}, durable = false,               -- definition d's table (read_call); the numbers of the durable ones
  P = {}, L = {}, item_count = 0,           -- item i's fields are at N[P[i] + ITEM_*]; its limit count at N[L[i]]
  live = false, ids = false,                -- an item is not a dry run (only then may the call write); has an id
  LOGGED = false, epoch_key = false,        -- item i's log entries (positions in N); the epoch key when rebuilding
  warm_key = false,                         -- the epoch's warm mark (keys.py), read with the epoch
  STORED = false, DUP = false, descriptor = false,  -- request ids: see request_ids
  lent = false,                             -- keys written for this call only (a rebuilt log only dry runs name)
  cache = {},                               -- counter states by key, loaded once per call
  out = {}, rolled_back = false,            -- each item's row; an atomic batch was refused
  COUNTED = {},                             -- the items decided here that are not dry runs: they log, store
  -- Atomic batches: per key, the most the batch needs at once (earlier consuming items + this one), and per item
  -- its reports before it consumed (for a rollback). note_need is made for atomic calls only (by evaluate).
  needs = {}, need_keys = {}, BEFORE = {}, note_need = false,
}

-- ARGV and the numbers, then one MGET of every key whose string state the call reads (`strings`).
-- Definitions: a table each, naming every field in its constructor (nil ones too), so it is made at its final
-- size: a field added later grows the table (a rehash, ~0.3 µs); the same holds for the fragments' states.
-- Items are not tables: item i's fields are at N[P[i] + ITEM_*], its units follow (UNIT_*), then its limit count
-- at N[L[i]] and its limits (LIMIT_*).
-- The log section, when the call has one: LOGGED[i] = the positions in N of item i's entries (ENTRY_*). A leased
-- concurrency definition knows its stream (lim.log), where the lease set's fragment logs the leases it drops as expired.
local function read_call()
  local now, N = read_now(ARGV[1]), cjson.decode(ARGV[4])
  C.now, C.atomic, C.look, C.N = now, ARGV[2] == ATOMIC or ARGV[2] == LOOK_ONLY, ARGV[2] == LOOK_ONLY, N
  local defs, P, L, durable, live, ids = C.defs, C.P, C.L, false, false, false
  local strings, p = {}, HEAD_SIZE + 1
  for d = 1, N[HEAD_DEFINITION_COUNT] do
    local code, key, bounds = CODES[N[p + DEF_ALGORITHM]], N[p + DEF_KEY], N[p + DEF_BOUND_COUNT]
    if not ALG[code] then define(code) end
    local lim = {code = code, key = KEYS[key], key2 = false, q = N[p + DEF_QUANTITY], per = N[p + DEF_PERIOD_MS],
      cap = N[p + DEF_CAPACITY], shadow = N[p + DEF_SHADOW] == 1, durability = N[p + DEF_DURABILITY],
      seed = N[p + DEF_SEED], ws = nil, we = nil, log = false}
    if code == 'sl' then
      lim.key2 = KEYS[key + 1]
      strings[#strings + 1] = lim.key2
    elseif code ~= 'cc' then
      strings[#strings + 1] = lim.key
    end
    p = p + DEF_SIZE
    if bounds > 0 then  -- a calendar's window bounds follow: the window holding now
      local i, last = p, p + bounds - 1
      while i < last - 1 and N[i + 1] <= now do i = i + 1 end
      lim.ws, lim.we = N[i], N[i + 1]
    end
    if lim.durability ~= NOT_DURABLE then
      durable = durable or {}
      durable[#durable + 1] = d
    end
    defs[d] = lim
    p = p + bounds
  end

  local item_count = N[HEAD_ITEM_COUNT]
  for i = 1, item_count do
    local l = p + ITEM_SIZE + UNIT_SIZE * N[p + ITEM_UNIT_COUNT]
    P[i], L[i] = p, l
    if N[p + ITEM_DRY_RUN] == 0 then live = true end
    local idem = N[p + ITEM_IDEMPOTENCY]
    if idem > 0 then
      strings[#strings + 1] = KEYS[idem]
      ids = true
    end
    p = l + 1 + LIMIT_SIZE * N[l]
  end
  C.durable, C.item_count, C.live, C.ids = durable, item_count, live, ids

  if N[p] and N[p] > 0 then
    local LOGGED = {}
    C.LOGGED = LOGGED
    local q = p + 1
    for _ = 1, N[p] do
      local i = N[q + ENTRY_ITEM]
      local entries = LOGGED[i]
      if not entries then
        entries = {}
        LOGGED[i] = entries
      end
      entries[#entries + 1] = q
      if N[q + ENTRY_POSITION] == 1 and N[P[i] + ITEM_LEASE] > 0 then
        defs[N[L[i] + 1 + LIMIT_DEFINITION]].log = KEYS[N[q + ENTRY_STREAM]]
      end
      q = q + ENTRY_SIZE
    end
    log_setup(itos(N[q + TAIL_MAXLEN]), ARGV[N[q + TAIL_INSTANCE]], now)
  end

  if durable and defs[durable[1]].durability == REBUILT then
    C.epoch_key, C.warm_key = KEYS[#KEYS], KEYS[#KEYS - 1]
    strings[#strings + 1] = C.epoch_key
    strings[#strings + 1] = C.warm_key
  end
  prefetch(strings)
end

-- Request ids (see the header), before anything is decided or written. STORED[i]: the decision to replay;
-- DUP[i]: the earlier item of the call item i repeats; descriptor(i): item i's descriptor ('' = none). Returns
-- the answer of a call that reuses an id with other parameters, else nil.
local function request_ids()
  local N, P, now, STORED, DUP = C.N, C.P, C.now, {}, {}
  local function descriptor(i)
    local desc = N[P[i] + ITEM_DESCRIPTOR]
    return desc > 0 and ARGV[desc] or ''
  end
  C.STORED, C.DUP, C.descriptor = STORED, DUP, descriptor
  local first_of, reused, sub = {}, nil, string.sub
  for i = 1, C.item_count do
    local idem, dry = N[P[i] + ITEM_IDEMPOTENCY], N[P[i] + ITEM_DRY_RUN] == 1
    if idem > 0 then
      local key, mine = KEYS[idem], sub(descriptor(i), -FINGERPRINT_LENGTH)
      local first, same = first_of[key], true
      if first then
        same, DUP[i] = sub(descriptor(first), -FINGERPRINT_LENGTH) == mine, first
      else
        local stored = fetch(key)
        if stored and now - tonumber(match(stored, '^(%d+)|')) < IDEMPOTENCY_TTL_MS then
          local theirs = match(stored, '|(%x+)$')  -- nil: stored before fingerprints
          same, STORED[i] = theirs == mine or (theirs == nil and not dry), stored
        elseif not dry then
          first_of[key] = i
        end
      end
      if not same then
        reused = reused or {REUSED}
        reused[#reused + 1] = i
      end
    end
  end
  return reused and {reused}
end

-- Durable counters lost with Redis's data (a store with a seeder only). The rebuilt ones the caller sends
-- ("<ttl ms>|<state>", seeds.py) are written unless they exist: another call may have rebuilt one first. Unless
-- `keep` (an item that is not a dry run names it), a counter is only read: its state is kept in FETCHED, where the
-- fragments load it from, and a log's set (read with ZRANGE) is lent. Then the epoch: returns the answer asking for
-- the counters still missing, else nil.
local function seeds()
  local N, P, L, defs, durable, now, epoch_key = C.N, C.P, C.L, C.defs, C.durable, C.now, C.epoch_key
  local function seed_write(lim, text, keep)
    local ttl_ms, state = match(text, '^(%d+)|(.*)$')
    if lim.code == 'cc' then  -- a lease set's allocations "<member>,...": held until released, so no TTL
      if state == '' or not keep or call('EXISTS', lim.key) == 1 then return end
      local batch = {}
      for member in string.gmatch(state, '[^,]+') do
        batch[#batch + 1] = '9007199254740991'  -- HELD, as text: a Lua number would lose its last digits
        batch[#batch + 1] = member
        if #batch >= 2000 then
          call('ZADD', lim.key, unpack(batch))
          batch = {}
        end
      end
      if #batch > 0 then call('ZADD', lim.key, unpack(batch)) end
      return
    end
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
      C.lent = C.lent or {}
      C.lent[#C.lent + 1] = lim.key
    end
  end

  local named = nil  -- the definitions named by an item that is not a dry run: their seeds are kept
  for _, d in ipairs(durable) do
    local lim = defs[d]
    if lim.seed > 0 then
      if not named then
        named = {}
        for i = 1, C.item_count do
          local l = L[i]
          if N[P[i] + ITEM_DRY_RUN] == 0 then
            for at = l + 1, l + LIMIT_SIZE * N[l], LIMIT_SIZE do named[N[at + LIMIT_DEFINITION]] = true end
          end
        end
      end
      seed_write(lim, ARGV[lim.seed], named[d])
    end
  end

  -- lookback(lim, now): the earliest time whose spending still shapes the counter (lookback.lua).

  -- After a Redis data loss the epoch key is gone too: it is set again now, and a missing durable counter whose
  -- look-back began before it may have forgotten what its records hold. (Resetting the epoch after an outage
  -- decided elsewhere makes every counter of an open window be rebuilt once.) A call of dry runs only reads: it
  -- takes now as the epoch without setting it, which asks for the same counters, and the first call that writes
  -- sets it. Once the epoch's warm-up is done (its mark is there, and goes with it), nothing is missing: a counter
  -- that is not there is new.
  local epoch = tonumber(fetch(epoch_key))
  if not epoch then
    epoch = now
    if C.live then call('SET', epoch_key, itos(now), 'PX', EPOCH_TTL_MS) end
  elseif fetch(C.warm_key) then
    return nil
  end
  local missing = {NEEDS_SEED, now}
  for _, d in ipairs(durable) do
    local lim = defs[d]
    if lim.seed == 0 then
      -- A lease set's allocations never age out: it looks back to the beginning.
      local cc = lim.code == 'cc'
      local since = cc and 0 or lookback(lim, now)
      if since < epoch and not (cc and call('EXISTS', lim.key) == 1 or not cc and fetch(lim.key2 or lim.key)) then
        missing[#missing + 1] = d
        missing[#missing + 1] = since
      end
    end
  end
  if #missing > 2 then return {missing} end
  return nil
end

-- Decide item i into its result row (see the header); the row reports the state after the item
-- when it consumed, before it otherwise. Atomic batches keep the reports before (BEFORE[i]) too,
-- for a rollback. The row is made at its final size for up to 3 limits (growing it rehashes).
local function decide(i)
  local N, defs, cache, now, atomic = C.N, C.defs, C.cache, C.now, C.atomic
  local p, l = C.P[i], C.L[i]
  local count, dry, lease = N[l], N[p + ITEM_DRY_RUN] == 1, N[p + ITEM_LEASE]
  local max_wait = N[p + ITEM_MAX_WAIT_MS]
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
    local at = l + 1 + LIMIT_SIZE * (j - 1)
    local lim, cost = defs[N[at + LIMIT_DEFINITION]], N[at + LIMIT_COST]
    local alg, st = ALG[lim.code], cache[lim.key]
    if not st then
      st = alg.load(lim, now)
      cache[lim.key] = st
    end
    local ok, wait, delay = true, 0, nil
    -- Only a shaper reads the fifth argument (its max wait; a shadow one waits for nothing) and answers a delay.
    if cost > 0 then ok, wait, delay = alg.eval(st, lim, now, cost, not lim.shadow and max_wait or 0) end
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
    if atomic then C.note_need(not dry and (lim.code ~= 'cc' or (j == 1 and lease > 0)), lim, cost, max_wait) end
  end
  if never then retry = -1 end
  if allowed then row[2] = shaped else row[2], row[1] = retry, 0 end
  local consume = allowed and not dry
  if atomic or not consume then
    for j = 1, count do
      local lim = defs[N[l + 1 + LIMIT_SIZE * (j - 1) + LIMIT_DEFINITION]]
      row[3 * j + 3], row[3 * j + 4] = ALG[lim.code].report(cache[lim.key], lim, now)
    end
    if consume then
      local before = {}
      for n = 5, 3 * count + 4 do before[n] = row[n] end
      C.BEFORE[i] = before
    end
  end
  if consume then
    local ttl_ms = N[p + ITEM_LEASE_TTL_MS]
    for j = 1, count do
      local at = l + 1 + LIMIT_SIZE * (j - 1)
      local lim, cost = defs[N[at + LIMIT_DEFINITION]], N[at + LIMIT_COST]
      local alg, st = ALG[lim.code], cache[lim.key]
      local leased = lease > 0 and (j == 1 or lim.code == 'st')  -- session_time limits hold the lease too
      if cost > 0 and (row[3 * j + 2] == 0 or leased) then
        alg.apply(st, lim, now, cost, leased and {lease = ARGV[lease], ttl = ttl_ms} or nil)
        st.lim = lim  -- the state is saved with the parameters of its last change, as in decide.py
      end
      row[3 * j + 3], row[3 * j + 4] = alg.report(st, lim, now)
    end
    if lease > 0 then row[4] = ttl_ms > 0 and now + ttl_ms or HELD end  -- ttl 0: an allocation
  end
  return row
end

-- Decide every item in order (replays and in-batch repeats take no part). out[i] is the item's row, {REPLAYED,
-- stored} for a replay, false for a repeat (answer_repeats).
local function evaluate()
  local N, P, out, COUNTED, atomic, ids = C.N, C.P, C.out, C.COUNTED, C.atomic, C.ids
  if atomic then
    local needs, need_keys = C.needs, C.need_keys
    C.note_need = function(consuming, lim, cost, wait)
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
  for i = 1, C.item_count do
    if ids and C.DUP[i] then
      out[i] = false
    elseif ids and C.STORED[i] then
      out[i] = {REPLAYED, C.STORED[i]}
    else
      local row = decide(i)
      out[i] = row
      if row[1] == 0 and atomic then C.rolled_back = true end
      if N[P[i] + ITEM_DRY_RUN] == 0 then COUNTED[#COUNTED + 1] = i end
    end
  end
  if C.look then C.rolled_back = true end
end

-- Save every counter state that changed; or, for an atomic batch with a refused item (or a look), refuse every
-- item with the earliest delay after which the whole batch would pass, reporting what it saw before, and save
-- nothing.
local function spend()
  local now, out = C.now, C.out
  if not C.rolled_back then
    for _, st in pairs(C.cache) do
      if st.dirty then ALG[st.lim.code].save(st, st.lim, now) end
    end
    return
  end
  local retry_all = 0
  for _, key in ipairs(C.need_keys) do
    local need = C.needs[key]
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
  for i = 1, C.item_count do
    local row = out[i]
    if row and row[1] ~= REPLAYED then
      row[1], row[2], row[4] = 0, retry_all, 0
      local before = C.BEFORE[i]
      if before then
        for n = 5, #row do row[n] = before[n] end
      end
    end
  end
end

-- The log entries (see the header) of the items that log, their outcome final.
local function log_decisions()
  local LOGGED = C.LOGGED
  local N, P, L, defs, out, now = C.N, C.P, C.L, C.defs, C.out, C.now
  for _, i in ipairs(C.COUNTED) do
    local entries = LOGGED[i]
    if entries then
      local row, p, l = out[i], P[i], L[i]
      local lease = N[p + ITEM_LEASE]
      for _, q in ipairs(entries) do
        local j, stream, label = N[q + ENTRY_POSITION], KEYS[N[q + ENTRY_STREAM]], N[q + ENTRY_LABEL]
        local at = l + 1 + LIMIT_SIZE * (j - 1)
        local lim, cost = defs[N[at + LIMIT_DEFINITION]], itos(N[at + LIMIT_COST])
        local code = lim.code
        local window = code == 'fw' and itos(now - now % lim.per) or code == 'cal' and itos(lim.ws) or '0'
        local function add(event, member, expires)
          LOG.add(stream, 'e', event, 'c', ARGV[label + LABEL_CUSTOMER], 'o', ARGV[label + LABEL_OPERATION],
            'l', ARGV[label + LABEL_LIMIT], 'a', ARGV[label + LABEL_ALGORITHM], 'k', lim.key, 'n', cost,
            'q', ARGV[label + LABEL_QUANTITY], 'p', ARGV[label + LABEL_PERIOD_MS], 'b', ARGV[label + LABEL_BURST],
            'w', window, 'g', ARGV[label + LABEL_SHADOW], 'm', 'exact', 'i', LOG.instance, 's', member, 'x', expires)
        end
        if N[q + ENTRY_AUDIT] == 1 then
          add(row[1] == 1 and 'allow' or 'deny', '', '0')
        end
        if j == 1 and lease > 0 and row[1] == 1 and row[4] > 0 then
          add('acquire', match(ARGV[lease], '^[^\n]*'), itos(row[4]))
        end
      end
    end
  end
end

-- Calls with request ids: an item repeating an earlier item's request id answers that item's row, marked replayed;
-- each decision decided here is kept under its request id: "<now>|<the row, comma-separated>|<descriptor>".
local function answer()
  local N, P, out, DUP = C.N, C.P, C.out, C.DUP
  for i = 1, C.item_count do
    if not out[i] then
      local row = {}
      for n, value in ipairs(out[DUP[i]]) do row[n] = value end
      row[3] = 1
      out[i] = row
    end
  end
  for _, i in ipairs(C.COUNTED) do
    local idem = N[P[i] + ITEM_IDEMPOTENCY]
    if idem > 0 then
      local row, fields = out[i], {}
      for n = 1, #row do fields[n] = itos(row[n]) end
      local stored = itos(C.now) .. '|' .. table.concat(fields, ',') .. '|' .. C.descriptor(i)
      call('SET', KEYS[idem], stored, 'PX', ttl(IDEMPOTENCY_TTL_MS))
    end
  end
end

-- The main body: the phases in order (see the header).
read_call()
if C.ids then
  local reused = request_ids()
  if reused then return reused end
end
if C.epoch_key then
  local missing = seeds()
  if missing then
    if C.lent then call('DEL', unpack(C.lent)) end
    return missing
  end
end
evaluate()
spend()
if C.LOGGED then log_decisions() end
if C.ids then answer() end
if C.lent then call('DEL', unpack(C.lent)) end
local out = C.out
out[#out + 1] = C.now
return out
