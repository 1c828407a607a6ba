-- KEYS: the run's events, its record; ARGV: how many events the run must hold now ("": any
-- number), then each event as JSON. Returns the last event's id, or -1 (nothing written) when
-- the run holds another number. The events expire with the record.
if ARGV[1] ~= '' and redis.call('LLEN', KEYS[1]) ~= tonumber(ARGV[1]) then return -1 end
local last = redis.call('RPUSH', KEYS[1], unpack(ARGV, 2))
local ttl = redis.call('PTTL', KEYS[2])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return last
