-- KEYS: job, failed, errors, results; ARGV: key, error class, message, cursor line ('' = leave), entry json.
-- A catalog line that never got in flight (bad line, bad or repeated id).
if ARGV[4] ~= '' then
  if redis.call('HGET', KEYS[1], 'state') ~= 'running' then return -1 end
  redis.call('HSET', KEYS[1], 'cursor', ARGV[4])
end
redis.call('HINCRBY', KEYS[1], 'failed', 1)
redis.call('HINCRBY', KEYS[3], ARGV[2], 1)
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode({error=ARGV[2], message=ARGV[3], attempts=0,
  entry=cjson.decode(ARGV[5]), dead=false}))
redis.call('XADD', KEYS[4], '*', 'i', ARGV[1], 's', 'failed', 'v', '', 'e', ARGV[2], 'm', ARGV[3])
return 1
