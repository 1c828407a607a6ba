-- KEYS: the run's events, its record; ARGV: each event as JSON. The events expire with the record.
local last = redis.call('RPUSH', KEYS[1], unpack(ARGV))
local ttl = redis.call('PTTL', KEYS[2])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return last
