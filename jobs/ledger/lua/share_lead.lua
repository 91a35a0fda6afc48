-- KEYS: a shared work's done key, its lead key; ARGV: item, lead seconds.
-- Where the work is done, {'done', its item}; else the lead is taken (or renewed) by this item where it is free
-- or already this item's, {'lead', item}; else {'wait', the leading item}.
local done = redis.call('GET', KEYS[1])
if done then return {'done', done} end
local lead = redis.call('GET', KEYS[2])
if (not lead) or lead == ARGV[1] then
  redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[2])
  return {'lead', ARGV[1]}
end
return {'wait', lead}
