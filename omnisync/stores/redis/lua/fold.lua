-- KEYS: active, inactive, meta
-- ARGV: first seq, last seq, expected count, "1" to delete, summary seq, summary member, now (µs)
local expected = tonumber(ARGV[3])
if expected <= 0 or redis.call('ZCOUNT', KEYS[1], ARGV[1], ARGV[2]) ~= expected then return 0 end
if redis.call('ZCOUNT', KEYS[1], ARGV[5], ARGV[5]) + redis.call('ZCOUNT', KEYS[2], ARGV[5], ARGV[5]) > 0 then return 0 end
if ARGV[4] ~= '1' then move_range(ARGV[1], ARGV[2]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[5], ARGV[6])
local previous = redis.call('HGET', KEYS[3], 'last')
if not previous or tonumber(previous) < tonumber(ARGV[7]) then redis.call('HSET', KEYS[3], 'last', ARGV[7]) end
return 1
