-- KEYS: active, inactive
-- ARGV: seq
-- Removes the message at seq from whichever set holds it (the session's seq counter stays);
-- returns how many were removed. One script, as both keys are in one slot (also on a cluster,
-- where a MULTI pipeline is not offered by every client version).
return redis.call('ZREMRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[1]) + redis.call('ZREMRANGEBYSCORE', KEYS[2], ARGV[1], ARGV[1])
