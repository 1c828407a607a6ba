-- KEYS: a listing set and its sorted twin (one slot); ARGV: the id's token. Lists it in both at once.
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
