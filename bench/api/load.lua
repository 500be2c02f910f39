-- wrk script for bench/api/run.py: POSTs check (or batch) bodies spread over many customers, resources
-- and client addresses, counts statuses and admitted batch items, and prints one JSON line at the end.
--
--   wrk -s load.lua URL -- MODE BATCH_SIZE CUSTOMERS OPERATION TOKEN
--   MODE: single | batch; TOKEN: the API key, or - for none.
-- The addresses in the bodies are documentation ranges (RFC 5737): data for the limits, never contacted.

local POOL = 512 -- distinct prepared requests per thread, picked at random
local threads = {}
local next_id = 1

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

local prepared = {}
local is_batch = false
-- Globals: done() reads them from every thread with thread:get.
ok, limited, other, items, admitted = 0, 0, 0, 0, 0
sample = ""

local function check_json(customers, operation)
  local ip = math.random(0, 511)
  return string.format(
    '{"customer":"cust-%d","operation":"%s","resource":"res-%d","ip":"%s.%d"}',
    math.random(1, customers), operation, math.random(1, 20),
    ip < 256 and "192.0.2" or "198.51.100", ip % 256
  )
end

function init(args)
  local mode, batch_size, customers, operation, token = args[1], tonumber(args[2]), tonumber(args[3]), args[4], args[5]
  math.randomseed(os.time() * 1000 + id)
  is_batch = mode == "batch"
  local headers = { ["Content-Type"] = "application/json" }
  if token ~= "-" then
    headers["Authorization"] = "Bearer " .. token
  end
  for i = 1, POOL do
    local body
    if is_batch then
      local parts = {}
      for j = 1, batch_size do
        parts[j] = check_json(customers, operation)
      end
      body = '{"mode":"independent","items":[' .. table.concat(parts, ",") .. "]}"
    else
      body = check_json(customers, operation)
    end
    prepared[i] = wrk.format("POST", nil, headers, body)
  end
end

function request()
  return prepared[math.random(1, POOL)]
end

function response(status, headers, body)
  if status >= 200 and status < 300 then
    ok = ok + 1
    if is_batch then
      local allowed, denied = string.match(body, '"allowed_count":%s*(%d+),%s*"denied_count":%s*(%d+)')
      if allowed then
        admitted = admitted + tonumber(allowed)
        items = items + tonumber(allowed) + tonumber(denied)
      end
    end
  elseif status == 429 then
    limited = limited + 1
  else
    other = other + 1
    if sample == "" then
      sample = status .. " " .. string.sub(body or "", 1, 400)
    end
  end
end

local function json_string(s)
  return '"' .. string.gsub(s, '[%c"\\]', function(c)
    return string.format("\\u%04x", string.byte(c))
  end) .. '"'
end

function done(summary, latency, requests)
  local t = { ok = 0, limited = 0, other = 0, items = 0, admitted = 0 }
  local first_sample = ""
  for _, thread in ipairs(threads) do
    for name, _ in pairs(t) do
      t[name] = t[name] + thread:get(name)
    end
    if first_sample == "" then
      first_sample = thread:get("sample")
    end
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect_errors":%d,"read_errors":%d,'
      .. '"write_errors":%d,"timeouts":%d,"status_errors":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,'
      .. '"max_us":%d,"mean_us":%.1f,"ok":%d,"limited":%d,"other":%d,"items":%d,"admitted":%d,"sample":%s}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
    t.ok, t.limited, t.other, t.items, t.admitted, json_string(first_sample)
  ))
end
