-- KEYS: inflight, leases, job; ARGV: new deadline. Re-dispatch every item still pending (not yet started):
-- used when a dispatcher takes a job over, since its predecessor may have died between admitting a page and
-- publishing it. Returns a flat list item, token, ...
local out = {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local rec = cjson.decode(all[i + 1])
  if rec['state'] == 'pending' then
    rec['token'] = (rec['token'] or 1) + 1
    redis.call('HSET', KEYS[1], all[i], cjson.encode(rec))
    redis.call('ZADD', KEYS[2], ARGV[1], all[i])
    table.insert(out, all[i]) table.insert(out, rec['token'])
  end
end
return out
