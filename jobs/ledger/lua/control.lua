-- KEYS: job, active, inflight, leases, at; ARGV: action, now. Job control; returns the new state or 'err:<state>'.
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return 'err:missing' end
local action = ARGV[1]
local to = nil
if action == 'pause' and state == 'running' then to = 'paused'
elseif action == 'resume' and (state == 'paused' or state == 'draining') then to = 'running'
elseif action == 'drain' and (state == 'running' or state == 'paused') then to = 'draining'
elseif action == 'cancel' and (state == 'running' or state == 'paused' or state == 'draining') then to = 'cancelled'
end
if not to then return 'err:' .. state end
redis.call('HSET', KEYS[1], 'state', to)
if to == 'cancelled' then
  redis.call('HSET', KEYS[1], 'finished_at', ARGV[2], 'cancelled_in_flight', redis.call('HLEN', KEYS[3]))
  redis.call('DEL', KEYS[3], KEYS[4], KEYS[5])
  redis.call('ZREM', KEYS[2], redis.call('HGET', KEYS[1], 'id'))
end
return to
