-- KEYS: inflight, leases; ARGV: item, now, lease deadline, token ('' = any). Marks the item running under a
-- lease; returns the attempt number, or 0 when the item is not in flight or the message's token is stale.
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local rec = cjson.decode(raw)
if ARGV[4] ~= '' and tonumber(ARGV[4]) ~= (rec['token'] or 1) then return 0 end
rec['state'] = 'running'
rec['attempts'] = (rec['attempts'] or 0) + 1
if not rec['first_at'] then rec['first_at'] = tonumber(ARGV[2]) end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(rec))
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return rec['attempts']
