-- deadline.lua: the prologue of every script a request sends (apps/engine/deadline.py puts it in front of the
-- script's first line, on that same line, so Redis's error line numbers still point into the script's own file).
-- ARGV[#ARGV] = the call's deadline, epoch ms in Redis's clock (0 = none); it is taken off ARGV, so the script
-- reads its own arguments where its header says.
-- A call that runs after its deadline writes nothing and answers the error "DEADLINE ...": its caller stopped
-- waiting (a socket timeout) and answered without Redis, and a paused or busy Redis that reads the call later
-- must not apply it then. Example (a deadline long past, so it refuses): EVAL "<this>return 1" 0 1
-- CALL_TIME: the TIME read here (nil without a deadline), which a script may take as its now (read_now).
local DEADLINE_MS, CALL_TIME = tonumber(table.remove(ARGV)), nil
if DEADLINE_MS > 0 then
  CALL_TIME = redis.call('TIME')
  if tonumber(CALL_TIME[1]) * 1000 + math.floor(tonumber(CALL_TIME[2]) / 1000) > DEADLINE_MS then
    return redis.error_reply('DEADLINE the caller stopped waiting before this call ran: nothing was written')
  end
end
