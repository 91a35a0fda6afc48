-- KEYS: workers, the worker's held set; ARGV: worker id, held set's ttl, every message it holds now.
-- A worker's heartbeat on Redis's own clock (no skew between nodes), with the whole truth of what it holds.
local t = redis.call('TIME')
redis.call('ZADD', KEYS[1], tonumber(t[1]) + tonumber(t[2]) / 1000000, ARGV[1])
redis.call('DEL', KEYS[2])
for i = 3, #ARGV do redis.call('SADD', KEYS[2], ARGV[i]) end
if #ARGV >= 3 then redis.call('EXPIRE', KEYS[2], ARGV[2]) end
return #ARGV - 2
