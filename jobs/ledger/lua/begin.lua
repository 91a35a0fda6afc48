-- KEYS: inflight, job, failed, leases, errors, results, at; ARGV: item, task id, lease deadline, crash limit,
-- message, stage ('' = leave), the message's dispatch token ('' = any), the worker running it ('' = none). One task
-- of the item begins: renews the lease, counts the delivery, notes the stage and the worker (should that worker be
-- lost, the item is its to rescue even where the message it took next never reached its held set). A task id still open from an earlier delivery means that delivery killed its worker (a finished task closes itself); after `crash limit` such
-- deliveries the item is dead-lettered instead of looping. A message of a superseded dispatch (its item was
-- re-dispatched since) changes nothing. Returns deliveries, 0 if not in flight or stale, -1 if dead.
local item = ARGV[1]
local raw = redis.call('HGET', KEYS[1], item)
if not raw then return 0 end
local rec = cjson.decode(raw)
if ARGV[7] and ARGV[7] ~= '' and tonumber(ARGV[7]) ~= (rec['token'] or 1) then return 0 end
if type(rec['open']) ~= 'table' then rec['open'] = {} end
rec['deliveries'] = (rec['deliveries'] or 0) + 1
if rec['open'][ARGV[2]] then rec['crashes'] = (rec['crashes'] or 0) + 1 end
if (rec['crashes'] or 0) >= tonumber(ARGV[4]) then
  redis.call('HSET', KEYS[1], item, cjson.encode(rec))
  local status, err, msg = 'dead', 'WorkerLost', ARGV[5]
-- @settle_body(0, -1)
end
rec['open'][ARGV[2]] = 1
rec['state'] = 'running'
if ARGV[8] and ARGV[8] ~= '' then rec['worker'] = ARGV[8] end
redis.call('HSET', KEYS[1], item, cjson.encode(rec))
redis.call('ZADD', KEYS[4], ARGV[3], item)
if ARGV[6] and ARGV[6] ~= '' then redis.call('HSET', KEYS[7], item, ARGV[6]) end
return rec['deliveries']
