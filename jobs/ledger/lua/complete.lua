-- KEYS: inflight, job, active, results; ARGV: now. Ends a job that has nothing in flight and no result left
-- unindexed, and either read its whole catalog (completed) or is draining (drained). Returns the final state
-- or ''.
local state = redis.call('HGET', KEYS[2], 'state')
if redis.call('HLEN', KEYS[1]) > 0 or redis.call('XLEN', KEYS[4]) > 0 then return '' end
local to = nil
if state == 'running' and redis.call('HGET', KEYS[2], 'exhausted') == '1' then to = 'completed'
elseif state == 'draining' then to = 'drained' end
if not to then return '' end
redis.call('HSET', KEYS[2], 'state', to, 'finished_at', ARGV[1])
redis.call('ZREM', KEYS[3], redis.call('HGET', KEYS[2], 'id'))
return to
