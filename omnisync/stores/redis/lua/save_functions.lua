-- A record's save: KEYS from k: record, run index, its events.
-- ARGV from a (_RUN_ARGS of them): expected version ("" creates), new version, data, status,
-- session, finished (µs or ""), index score, run token, expire at (ms or "")
local function fits(k, a)
  if ARGV[a] == '' then return redis.call('EXISTS', KEYS[k]) == 0 end
  return redis.call('HGET', KEYS[k], 'version') == ARGV[a]
end
local function save(k, a, data)
  redis.call('HSET', KEYS[k], 'version', ARGV[a + 1], 'data', data, 'status', ARGV[a + 3], 'session', ARGV[a + 4], 'finished', ARGV[a + 5])
  if ARGV[a] == '' then
    redis.call('ZADD', KEYS[k + 1], ARGV[a + 6], ARGV[a + 7])
  else
    redis.call('ZADD', KEYS[k + 1], 'NX', ARGV[a + 6], ARGV[a + 7])
  end
  if ARGV[a + 8] == '' then
    redis.call('PERSIST', KEYS[k])
    redis.call('PERSIST', KEYS[k + 2])
  else
    redis.call('PEXPIREAT', KEYS[k], ARGV[a + 8])
    redis.call('PEXPIREAT', KEYS[k + 2], ARGV[a + 8])
  end
end
