-- session_time.lua: KEYS[lim.key] = "<window start ms>:<closed ms>[,<member>:<start ms>:<expiry ms>]*", the
-- reference model's state (apps/engine/reference/session_time.py): the window's time of ended sessions, and the
-- open sessions (leases acquired with this limit). TTL to the end of the window, or of the window in which
-- the last session expires. q = seconds per window, per = the window in ms. A check only looks; a lease
-- (its payload "<member>\n...", store/sessions.py) opens a session. Also run by lease_renew.lua and
-- lease_release.lua, with `lim` made from the lease's record.
ALG.st = {}

-- Loaded settled: in now's window, the sessions expired by now folded into closed.
function ALG.st.load(lim, now)
  local start = now - now % lim.per
  local st = {ws = start, closed = 0, sessions = {}, lim = lim, dirty = false}
  local raw = fetch(lim.key)
  if raw then
    local ws, closed, rest = match(raw, '^(%d+):(%d+)(.*)$')
    ws = tonumber(ws)
    if ws >= start then st.ws, st.closed = ws, tonumber(closed) end
    for member, begun, expires in string.gmatch(rest, ',([^:,]+):(%d+):(%d+)') do
      begun, expires = tonumber(begun), tonumber(expires)
      if expires > now then
        st.sessions[#st.sessions + 1] = {member, begun, expires}
      else
        st.closed = st.closed + max(0, expires - max(begun, st.ws))
      end
    end
  end
  return st
end

local function st_used(st, now)
  local used = st.closed
  for _, s in ipairs(st.sessions) do used = used + max(0, now - max(s[2], st.ws)) end
  return used
end

function ALG.st.eval(st, lim, now, cost)
  if lim.q < 1 then return false, -1 end
  if st_used(st, now) < lim.q * 1000 then return true, 0 end
  return false, st.ws + lim.per - now
end

function ALG.st.apply(st, lim, now, cost, lease)
  if not lease then return end
  st.sessions[#st.sessions + 1] = {match(lease.lease, '^[^\n]*'), now, now + lease.ttl}
  st.dirty = true
end

function ALG.st.report(st, lim, now)
  return ceil_div(max(0, lim.q * 1000 - st_used(st, now)), 1000), st.ws + lim.per - now
end

-- Renewing: the session of `member` now ends at `expires` (a session the state lost is opened now).
function ALG.st.hold(st, now, member, expires)
  st.dirty = true
  for _, s in ipairs(st.sessions) do
    if s[1] == member then
      s[3] = expires
      return
    end
  end
  st.sessions[#st.sessions + 1] = {member, now, expires}
end

-- Releasing: the session's time in the window moves to closed.
function ALG.st.close(st, now, member)
  local kept = {}
  for _, s in ipairs(st.sessions) do
    if s[1] == member then
      st.closed = st.closed + max(0, now - max(s[2], st.ws))
    else
      kept[#kept + 1] = s
    end
  end
  st.sessions, st.dirty = kept, true
end

function ALG.st.save(st, lim, now)
  local parts, last = {itos(st.ws) .. ':' .. itos(st.closed)}, st.ws + lim.per
  for _, s in ipairs(st.sessions) do
    parts[#parts + 1] = s[1] .. ':' .. itos(s[2]) .. ':' .. itos(s[3])
    last = max(last, ceil_div(s[3], lim.per) * lim.per)
  end
  call('SET', lim.key, table.concat(parts, ','), 'PX', ttl(last - now))
end
