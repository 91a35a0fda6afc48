-- Shared Lua, not a script of its own: settle an in-flight item. A script takes it in with a line
-- `-- @settle_body(<nothing to settle>, <settled>)`, whose return values replace RET_NONE and RET_DONE
-- (jobs/ledger/scripts.py). Needs KEYS[1]=inflight, [2]=job, [3]=failed, [4]=leases, [5]=errors, [6]=results,
-- [7]=at; `item`, `status` ('done'|'failed'|'dead'), `err` and `msg` locals.
local raw = redis.call('HGET', KEYS[1], item)
if not raw then return RET_NONE end
local rec = cjson.decode(raw)
redis.call('HDEL', KEYS[1], item)
redis.call('ZREM', KEYS[4], item)
redis.call('HDEL', KEYS[7], item)
local version = ''
if type(rec['entry']) == 'table' and type(rec['entry']['version']) == 'string' then version = rec['entry']['version'] end
if status == 'done' then
  redis.call('HINCRBY', KEYS[2], 'done', 1)
else
  redis.call('HINCRBY', KEYS[2], 'failed', 1)
  if status == 'dead' then redis.call('HINCRBY', KEYS[2], 'dead', 1) end
  redis.call('HINCRBY', KEYS[5], err, 1)
  redis.call('HSET', KEYS[3], item, cjson.encode({error=err, message=msg, attempts=rec['attempts'] or 0,
    entry=rec['entry'], dead=(status == 'dead')}))
end
redis.call('XADD', KEYS[6], '*', 'i', item, 's', status, 'v', version, 'e', err, 'm', msg)
return RET_DONE
