-- KEYS: active, inactive, meta
-- ARGV: first seq, last seq, expected count
-- Returns 1 when exactly the expected count of active messages lay in the range and moved to
-- the inactive set, else 0 (nothing changed): the compare-and-set of an undo.
local expected = tonumber(ARGV[3])
if expected <= 0 or redis.call('ZCOUNT', KEYS[1], ARGV[1], ARGV[2]) ~= expected then return 0 end
move_range(ARGV[1], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[2])
return 1
