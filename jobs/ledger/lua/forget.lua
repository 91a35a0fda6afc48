-- KEYS: workers, the worker's held set; ARGV: worker id, seconds without a heartbeat, the entries handled.
-- A lost worker's handled messages leave its held set; once none is left, the worker leaves the registry, unless
-- it beat again meanwhile (it was alive after all: its beat keeps what it holds). Returns 1 when it left.
for i = 3, #ARGV do redis.call('SREM', KEYS[2], ARGV[i]) end
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local last = redis.call('ZSCORE', KEYS[1], ARGV[1])
if last and tonumber(last) > now - tonumber(ARGV[2]) then return 0 end
if redis.call('SCARD', KEYS[2]) > 0 then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
return 1
