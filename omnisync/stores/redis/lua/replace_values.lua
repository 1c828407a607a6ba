-- KEYS: active, inactive. ARGV: per message its seq and its new member (created_at kept by the caller).
-- Each member of that seq, in whichever set holds it, is replaced. Returns how many were found.
local found = 0
for i = 1, #ARGV, 2 do
  local seq = ARGV[i]
  for target = 1, 2 do
    if redis.call('ZREMRANGEBYSCORE', KEYS[target], seq, seq) > 0 then
      redis.call('ZADD', KEYS[target], seq, ARGV[i + 1])
      found = found + 1
    end
  end
end
return found
