-- KEYS: inflight, job, leases; ARGV: item, record json, lease deadline, cursor line ('' = leave)
-- Returns 1 admitted, 0 already in flight, -1 the job no longer takes items (the cursor is left alone then).
if redis.call('HGET', KEYS[2], 'state') ~= 'running' then return -1 end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[2], 'cursor', ARGV[4]) end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
redis.call('HINCRBY', KEYS[2], 'dispatched', 1)
if not redis.call('HGET', KEYS[2], 'started_at') then redis.call('HSET', KEYS[2], 'started_at', ARGV[5]) end
return 1
