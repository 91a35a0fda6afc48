-- KEYS: inflight, job, failed, leases, errors, results, at; ARGV: item, now, new deadline, max dispatches, message,
-- the dispatch token its lost worker held ('' = the lease decides), error name. Re-dispatch an item whose lease
-- expired, or whose worker was lost while it held the item's dispatch `token`: bump the token (the lost message,
-- should it ever come back, is then stale) or dead-letter the item after max dispatches. Returns the new token,
-- 0 when there is nothing to do (lease not expired, or the item re-dispatched since), -1 dead.
local item = ARGV[1]
local raw = redis.call('HGET', KEYS[1], item)
if not raw then redis.call('ZREM', KEYS[4], item) return 0 end
local rec = cjson.decode(raw)
local token = (rec['token'] or 1)
if ARGV[6] == '' then
  local deadline = redis.call('ZSCORE', KEYS[4], item)
  if deadline and tonumber(deadline) > tonumber(ARGV[2]) then return 0 end
elseif tonumber(ARGV[6]) ~= token then
  return 0
end
if token >= tonumber(ARGV[4]) then
  local status, err, msg = 'dead', ARGV[7], ARGV[5]
-- @settle_body(0, -1)
end
rec['token'] = token + 1
rec['state'] = 'pending'
rec['open'] = {}
redis.call('HSET', KEYS[1], item, cjson.encode(rec))
redis.call('ZADD', KEYS[4], ARGV[3], item)
redis.call('HDEL', KEYS[7], item)
redis.call('HINCRBY', KEYS[2], 'redispatched', 1)
return rec['token']
