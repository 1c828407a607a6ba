-- KEYS: a listing set and its sorted twin; ARGV: lowest member ("-" or "(" + token), how many.
-- Returns how many the twin lacks (a set listed before twins existed), and the next members.
return {redis.call('SCARD', KEYS[1]) - redis.call('ZCARD', KEYS[2]),
        redis.call('ZRANGEBYLEX', KEYS[2], ARGV[1], '+', 'LIMIT', 0, ARGV[2])}
