-- KEYS: workers; ARGV: seconds without a heartbeat. The worker ids silent that long, by Redis's clock.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]), 'LIMIT', 0, 100)
