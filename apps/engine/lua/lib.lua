-- lib.lua: helpers shared by every fragment (assembled first; no KEYS/ARGV of its own).
-- Redis Lua numbers are doubles: every integer stays below 2^53, divisions are corrected to exact
-- integer floors (fdiv/cdiv in meter.lua), and numbers go back to Redis as strings formatted with %d,
-- never as floats.
local tonumber, floor, max, format, match, call = tonumber, math.floor, math.max, string.format, string.match, redis.call
local SLACK_MS = 1000          -- keys outlive their state a little: expiry never decides anything
local TTL_FLOOR_MS = 0         -- 10 minutes when a test clock is given: fake time must not race real expiry
-- Algorithms are defined when a call first names them (check.lua runs define(code), which runs the
-- fragment), so a call pays only for the fragments it needs. Fragments read their string state through
-- fetch(): one MGET for all.
local define
local ALG = {}
local FETCHED = {}

local function itos(n)
  return format('%d', n)
end

-- A key's TTL argument; counters of one period share it, so each text is made once a call (TTL_TEXTS).
local TTL_TEXTS = {}
local function ttl(ms)
  ms = max(max(ms, 1) + SLACK_MS, TTL_FLOOR_MS)
  local text = TTL_TEXTS[ms]
  if not text then
    text = itos(ms)
    TTL_TEXTS[ms] = text
  end
  return text
end

-- A Redis Function's call (a shape's library, script/shapes.py) starts here: its functions outlive the call, and
-- what a script's call starts with anew must too.
local function fresh_call()
  FETCHED, TTL_TEXTS, TTL_FLOOR_MS = {}, {}, 0
end

-- The call's now: the test clock's ms in `arg`, or Redis's TIME (`t` when the caller read it already, the deadline
-- prologue's CALL_TIME: one TIME a call).
local function read_now(arg, t)
  if arg ~= '' then
    TTL_FLOOR_MS = 600000
    return tonumber(arg)
  end
  t = t or call('TIME')
  return tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
end

local function prefetch(keys)
  for first = 1, #keys, 1000 do
    local last = math.min(first + 999, #keys)
    local values = call('MGET', unpack(keys, first, last))
    for i = first, last do FETCHED[keys[i]] = values[i - first + 1] end
  end
end

local function fetch(key)
  local value = FETCHED[key]
  if value == nil then
    value = call('GET', key)
    FETCHED[key] = value
  end
  return value
end

-- Exact integer ceiling of a / b for a, b >= 0 below 2^53 (the division itself may round).
local function ceil_div(a, b)
  local q = floor(a / b)
  while q * b < a do q = q + 1 end
  while q > 0 and (q - 1) * b >= a do q = q - 1 end
  return q
end

-- "<window start ms>:<used>", shared by the window fragments (a fixed window and a calendar one; a lost counter is
-- written back by check.lua's seeds before it is loaded, or only put in FETCHED when dry runs alone read it).
local function window_load(lim, start)
  local st = {start = start, used = 0, lim = lim, dirty = false}  -- every field: growing it rehashes
  local raw = fetch(lim.key)
  if raw then
    local stored, used = match(raw, '^(%d+):(%d+)$')
    stored = tonumber(stored)
    if stored >= start then
      st.start, st.used = stored, tonumber(used)
    end
  end
  return st
end

-- The decision and session log (apps/engine/decision_log.py): capped streams "<prefix>:dlog:{<tag>}", written
-- in the same call as what they record. LOG.cap stays false (nothing logged) until a script that logs runs
-- log_setup(cap, instance, now), which defines LOG's functions (a function is a closure made on every call:
-- only a call that logs pays for them).
local LOG = {cap = false, instance = '', now = ''}
local function log_setup(cap, instance, now)
  LOG.cap, LOG.instance, LOG.now = cap, instance, itos(now)
  local char, B64 = string.char, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  -- keys.enc undone (percent-encoding), and keys._b64 (URL-safe base64 without padding): lease members and
  -- keys name their customer, operation and limit so.
  local function unquote(s)
    return (string.gsub(s, '%%(%x%x)', function(h) return char(tonumber(h, 16)) end))
  end
  local function unb64(s)
    local out, acc, bits = {}, 0, 0
    for n = 1, #s do
      acc, bits = acc * 64 + (string.find(B64, string.sub(s, n, n), 1, true) or 1) - 1, bits + 6
      if bits >= 8 then
        bits = bits - 8
        local byte = floor(acc / 2 ^ bits)
        out[#out + 1], acc = char(byte), acc - byte * 2 ^ bits
      end
    end
    return table.concat(out)
  end
  -- A stream lives two days after its last entry (as usage does; the drain reads it long before).
  local touched = {}
  function LOG.add(stream, ...)
    call('XADD', stream, 'MAXLEN', '~', LOG.cap, '*', 't', LOG.now, ...)
    if not touched[stream] then
      touched[stream] = true
      call('PEXPIRE', stream, '172800000')
    end
  end
  -- The operation of a usage base "<prefix>:u:{<tag>}:<operation>:[s=<service>:][k=<key>:]" (keys.py).
  LOG.unquote, LOG.unb64 = unquote, unb64  -- for the fragments' own entries (the lease set's LOG.lease)
  function LOG.operation(usage_base)
    return unquote(match(usage_base, '}:([^:]*):') or '')
  end
  -- An expired lease noticed as it is removed from the set.
  function LOG.expire(stream, key, member, expires)
    LOG.add(stream, 'e', 'expire', 'c', unb64(match(member, '^[^.]*')), 'k', key, 's', member, 'x', itos(expires),
      'i', LOG.instance)
  end
end
