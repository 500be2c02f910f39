-- allocations.lua: make a concurrency set hold exactly ARGV[2] allocations (leases held until released), from
-- the service's own count (seed 002's "database as counter"; reference/concurrency.resync). Assembled after
-- lib.lua and concurrency.lua (FOREVER, ALLOCATION_TTL_MS), like lease_renew.lua.
-- KEYS[1] = the concurrency set. ARGV[1] = now ms ('' = Redis TIME), ARGV[2] = held, ARGV[3] = the owner of the
-- placeholders added (the customer, as a lease member names it: keys._b64).
-- The leases expired by now are dropped first (not logged). Missing allocations are added as placeholders
-- "<owner>.s<now>.<n>" (the smallest n from 1 not held already); extra ones are dropped, placeholders first, then other allocations, the
-- greatest member first (the set's order: bytes). Leases that expire are left as they are. The set then lives
-- ALLOCATION_TTL_MS when it holds an allocation, else until its last lease expires.
-- Returns how many allocations the set held before.
local now = read_now(ARGV[1])
local held, owner, key = tonumber(ARGV[2]), ARGV[3], KEYS[1]
call('ZREMRANGEBYSCORE', key, '-inf', itos(now))
local members = call('ZRANGEBYSCORE', key, FOREVER_TEXT, FOREVER_TEXT)
local before = #members
local batch, command = {}, nil
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
    local name = owner .. '.s' .. itos(now) .. '.' .. itos(n)
    if not taken[name] then
      batch[#batch + 1] = FOREVER_TEXT
      batch[#batch + 1] = name
      adding = adding - 1
      if #batch >= 2000 then flush() end
    end
  end
  flush()
elseif before > held then
  command = 'ZREM'
  local dropping = before - held
  for pass = 1, 2 do  -- placeholders, then the others
    for i = before, 1, -1 do
      if dropping == 0 then break end
      if (string.find(members[i], '.s', 1, true) ~= nil) == (pass == 1) then
        batch[#batch + 1] = members[i]
        dropping = dropping - 1
        if #batch >= 1000 then flush() end
      end
    end
  end
  flush()
end
if held > 0 then
  call('PEXPIRE', key, ttl(ALLOCATION_TTL_MS))
else
  local last = call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
  if last then call('PEXPIRE', key, ttl(tonumber(last) - now)) end
end
return before
