-- KEYS: inflight, the worker's held set; ARGV: item, task id, held entry ('' = none). A task ended (success,
-- named failure or retry): close it, and its worker holds its message no more.
if ARGV[3] ~= '' then redis.call('SREM', KEYS[2], ARGV[3]) end
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local rec = cjson.decode(raw)
if type(rec['open']) ~= 'table' or not rec['open'][ARGV[2]] then return 0 end
rec['open'][ARGV[2]] = nil
if next(rec['open']) == nil then rec['open'] = {} end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(rec))
return 1
