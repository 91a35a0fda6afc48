-- KEYS: parent claims hash, retry job, retry inflight, retry leases; ARGV: item, record json, deadline, now.
-- A retry job takes a parent's failed item: once, whatever the number of concurrent retries. An item claimed by
-- a retry job that has since finished may be claimed again.
local owner = redis.call('HGET', KEYS[1], ARGV[1])
if owner then
  local state = redis.call('HGET', 'rg:job:' .. owner, 'state')
  if state == 'running' or state == 'paused' or state == 'draining' or owner == redis.call('HGET', KEYS[2], 'id') then
    return 0
  end
end
if redis.call('HGET', KEYS[2], 'state') ~= 'running' then return -1 end
redis.call('HSET', KEYS[1], ARGV[1], redis.call('HGET', KEYS[2], 'id'))
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[1])
redis.call('HINCRBY', KEYS[2], 'dispatched', 1)
if not redis.call('HGET', KEYS[2], 'started_at') then redis.call('HSET', KEYS[2], 'started_at', ARGV[4]) end
return 1
