-- KEYS: active, inactive. ARGV: lowest score ("-inf" or "(seq"), page size.
-- The first page-size of each set at one moment; the caller merges them by seq and keeps page-size.
return {redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], '+inf', 'LIMIT', 0, ARGV[2]),
        redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[1], '+inf', 'LIMIT', 0, ARGV[2])}
