-- KEYS: run index; ARGV: record key stem, cutoff (µs), then the finished statuses
local finished = {}
for i = 3, #ARGV do finished[ARGV[i]] = true end
local cutoff = tonumber(ARGV[2])
local count = 0
for _, token in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local key = ARGV[1] .. token
  local fields = redis.call('HMGET', key, 'status', 'finished')
  if not fields[1] then
    redis.call('ZREM', KEYS[1], token)
  elseif finished[fields[1]] and fields[2] and fields[2] ~= '' and tonumber(fields[2]) < cutoff then
    redis.call('DEL', key, key .. ':events')
    redis.call('ZREM', KEYS[1], token)
    count = count + 1
  end
end
return count
