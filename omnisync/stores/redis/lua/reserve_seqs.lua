-- KEYS: meta. ARGV: how far to move the seq counter (step * count), "1" if the session was just listed.
-- Returns the last seq reserved, or -1 (nothing reserved) when the session is not listed yet.
-- The first half of an append of sealed messages (their seqs are sealed in): append_placed writes them.
if redis.call('HEXISTS', KEYS[1], 'listed') == 0 then
  if ARGV[2] ~= '1' then return -1 end
  redis.call('HSET', KEYS[1], 'listed', 1)
end
return redis.call('HINCRBY', KEYS[1], 'seq', ARGV[1])
