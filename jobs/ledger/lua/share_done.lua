-- KEYS: a shared work's done key, its lead key; ARGV: item, seconds the done work is kept.
-- The item's work is done: its items to come copy it; the lead is given up if it is still this item's.
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 1
