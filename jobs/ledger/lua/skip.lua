-- KEYS: job; ARGV: cursor line. A line skipped (already done): counted with its cursor move, atomically.
if redis.call('HGET', KEYS[1], 'state') ~= 'running' then return -1 end
redis.call('HINCRBY', KEYS[1], 'skipped', 1)
if ARGV[1] ~= '' then redis.call('HSET', KEYS[1], 'cursor', ARGV[1]) end
return 1
