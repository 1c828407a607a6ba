-- KEYS: active, inactive, meta
-- ARGV from a: step, "1" if the session was just listed, now (µs), then to the end, per message
-- "a" or "i" + its JSON after the "{".
-- Returns the last seq written, or -1 (nothing written) when the session is not listed yet.
local function append(a)
if redis.call('HEXISTS', KEYS[3], 'listed') == 0 then
  if ARGV[a + 1] ~= '1' then return -1 end
  redis.call('HSET', KEYS[3], 'listed', 1)
end
local step = tonumber(ARGV[a])
local count = #ARGV - a - 2
local last = redis.call('HINCRBY', KEYS[3], 'seq', step * count)
local seq = last - step * count
local batches = {{}, {}}
for i = a + 3, #ARGV do
  seq = seq + step
  local item = ARGV[i]
  local target = (string.sub(item, 1, 1) == 'a') and 1 or 2
  local batch = batches[target]
  batch[#batch + 1] = seq
  batch[#batch + 1] = '{"seq":' .. seq .. ',' .. string.sub(item, 2)
  if #batch >= BATCH then
    redis.call('ZADD', KEYS[target], unpack(batch))
    batches[target] = {}
  end
end
for target = 1, 2 do
  if #batches[target] > 0 then redis.call('ZADD', KEYS[target], unpack(batches[target])) end
end
local previous = redis.call('HGET', KEYS[3], 'last')
if not previous or tonumber(previous) < tonumber(ARGV[a + 2]) then redis.call('HSET', KEYS[3], 'last', ARGV[a + 2]) end
return last
end
