-- KEYS: inflight, job, failed, leases, errors, results, at; ARGV: item, status, error class, message
local item, status, err, msg = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
-- @settle_body(0, 1)
