local found = {}
for _, token in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local fields = redis.call('HMGET', ARGV[1] .. token, 'data', 'status', 'session')
  if not fields[1] then
    redis.call('ZREM', KEYS[1], token)
  elseif (ARGV[2] ~= '1' or fields[2] == ARGV[3]) and (ARGV[4] ~= '1' or fields[3] == ARGV[5]) then
    found[#found + 1] = fields[1]
  end
end
return found
