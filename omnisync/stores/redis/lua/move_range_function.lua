-- KEYS: active, inactive (the caller's)
-- move_range(first, last): the active messages whose seq lies in [first, last] added to the
-- inactive set with their seqs, in batches (Lua's unpack has a stack limit). The caller then
-- removes the range from the active set.
local function move_range(first, last)
  local moved = redis.call('ZRANGEBYSCORE', KEYS[1], first, last, 'WITHSCORES')
  local batch = {}
  for i = 1, #moved, 2 do
    batch[#batch + 1] = moved[i + 1]
    batch[#batch + 1] = moved[i]
    if #batch >= BATCH then
      redis.call('ZADD', KEYS[2], unpack(batch))
      batch = {}
    end
  end
  if #batch > 0 then redis.call('ZADD', KEYS[2], unpack(batch)) end
end
