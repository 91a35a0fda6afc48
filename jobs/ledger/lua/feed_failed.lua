-- KEYS: job, active, inflight, leases, at; ARGV: cause, attempts, now. Serving the job raised an unexpected error:
-- count it, and once `attempts` came in a row fail the job, dropping its items in flight as a cancel does.
-- Returns the failures in a row so far, 0 when the job failed now, -1 when it was no longer live.
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'running' and state ~= 'paused' and state ~= 'draining' then return -1 end
local tries = redis.call('HINCRBY', KEYS[1], 'feed_errors', 1)
redis.call('HSET', KEYS[1], 'error', ARGV[1])
if tries < tonumber(ARGV[2]) then return tries end
redis.call('HSET', KEYS[1], 'state', 'failed', 'finished_at', ARGV[3], 'failed_in_flight', redis.call('HLEN', KEYS[3]))
redis.call('DEL', KEYS[3], KEYS[4], KEYS[5])
redis.call('ZREM', KEYS[2], redis.call('HGET', KEYS[1], 'id'))
return 0
