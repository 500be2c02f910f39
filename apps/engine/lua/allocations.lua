-- allocations.lua: make one customer hold exactly ARGV[2] allocations (leases held until released) in a concurrency
-- set, from the service's own count (seed 002's "database as counter"; the lease set model's resync). Assembled after
-- lib.lua and the lease set's fragment (FOREVER, ALLOCATION_TTL_MS; store/sessions.py), like lease_renew.lua.
-- KEYS[1] = the concurrency set. ARGV[1] = now ms ('' = Redis TIME), ARGV[2] = held, ARGV[3] = the owner: the
-- customer as a lease member names it (keys.lease_owner_part), ARGV[4] = the most allocations one call may add or drop.
-- Only the owner's allocations move: on a set several customers share, the others' are left alone.
-- The leases expired by now are dropped first (not logged). The owner's allocations are found by rank, not by a scan
-- of the set: a marker "<owner>." is added at score FOREVER, where members of one score sort by their bytes, and the
-- members right after it that start with "<owner>." are the owner's (at most held + ARGV[4] + 1 are read), so the work
-- is O(log N + the owner's allocations), whatever the others hold. Missing allocations are added as placeholders
-- "<owner>.s<now>.<n>" (the smallest n from 1 not held already); extra ones are dropped, placeholders first, then the
-- owner's other allocations, the greatest member first. The set then has no TTL while it holds an allocation, else
-- lives until its last lease expires.
-- A set Redis lost is rebuilt first, as check.lua's seeds phase rebuilds one (store/seeds.py), so "before" counts
-- what was held and lease ids from before the loss still name their allocations: ARGV[5] '' = the caller keeps no
-- allocations (nothing asked); '?' = ask when the set is missing and KEYS[2], the epoch's warm mark (keys.py), is
-- not there; "0|<member>,..." = the kept allocations, written while the set is still missing.
-- Returns {how many allocations the owner held before, the owner's allocations now...} (the caller keeps them in
-- PostgreSQL, from where a set Redis lost is rebuilt); {-1} (and writes nothing) when the call would add or drop
-- more than ARGV[4]; {-2} (and writes nothing) when the set must be rebuilt first: the caller sends its seed.
local now = read_now(ARGV[1])
local held, owner, most, key = tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), KEYS[1]
local seed = ARGV[5] or ''
if seed ~= '' and call('EXISTS', key) == 0 then
  if seed == '?' then
    if not call('GET', KEYS[2]) then return {-2} end  -- cold: the set may have been lost
  else
    for member in string.gmatch(match(seed, '^%d+|(.*)$'), '[^,]+') do call('ZADD', key, FOREVER_TEXT, member) end
  end
end
local head = owner .. '.'
call('ZADD', key, FOREVER_TEXT, head)
local rank = call('ZRANK', key, head)
local following = call('ZRANGE', key, rank + 1, rank + held + most + 1)
call('ZREM', key, head)
local members = {}
for _, member in ipairs(following) do
  if string.sub(member, 1, #head) ~= head then break end
  members[#members + 1] = member
end
local before = #members
if math.abs(held - before) > most then return {-1} end  -- the marker is gone again: nothing written
call('ZREMRANGEBYSCORE', key, '-inf', itos(now))
local batch, command, kept, dropped = {}, nil, {}, {}
local function flush()
  if #batch > 0 then call(command, key, unpack(batch)) end
  batch = {}
end
if before < held then
  command = 'ZADD'
  local taken, n, adding = {}, 0, held - before
  for _, member in ipairs(members) do taken[member] = true end
  while adding > 0 do
    n = n + 1
    local name = head .. 's' .. itos(now) .. '.' .. itos(n)
    if not taken[name] then
      batch[#batch + 1] = FOREVER_TEXT
      batch[#batch + 1] = name
      kept[#kept + 1] = name
      adding = adding - 1
      if #batch >= 2000 then flush() end
    end
  end
  flush()
  for _, member in ipairs(members) do kept[#kept + 1] = member end
elseif before > held then
  command = 'ZREM'
  local dropping = before - held
  for pass = 1, 2 do  -- placeholders, then the others
    for i = before, 1, -1 do
      if dropping == 0 then break end
      if not dropped[i] and (string.sub(members[i], #head, #head + 1) == '.s') == (pass == 1) then
        batch[#batch + 1] = members[i]
        dropped[i] = true
        dropping = dropping - 1
        if #batch >= 1000 then flush() end
      end
    end
  end
  flush()
  for i, member in ipairs(members) do
    if not dropped[i] then kept[#kept + 1] = member end
  end
else
  kept = members
end
if call('ZCOUNT', key, FOREVER_TEXT, FOREVER_TEXT) > 0 then
  call('PERSIST', key)
else
  local last = call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
  if last then call('PEXPIRE', key, ttl(tonumber(last) - now)) end
end
table.insert(kept, 1, before)
return kept
