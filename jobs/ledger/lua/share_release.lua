-- KEYS: a shared work's lead key; ARGV: item.
-- The item gives up the lead (it failed): the next item waiting for the work takes it and does it itself.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
