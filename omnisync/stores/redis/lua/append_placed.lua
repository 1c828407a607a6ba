-- KEYS: active, inactive, meta. ARGV: now (µs), then per message its seq (reserved by
-- reserve_seqs) and "a" or "i" + its JSON after the "{". Returns the number written.
for i = 2, #ARGV, 2 do
  local seq = ARGV[i]
  local item = ARGV[i + 1]
  local target = (string.sub(item, 1, 1) == 'a') and 1 or 2
  redis.call('ZADD', KEYS[target], seq, '{"seq":' .. seq .. ',' .. string.sub(item, 2))
end
local previous = redis.call('HGET', KEYS[3], 'last')
if not previous or tonumber(previous) < tonumber(ARGV[1]) then redis.call('HSET', KEYS[3], 'last', ARGV[1]) end
return (#ARGV - 1) / 2
