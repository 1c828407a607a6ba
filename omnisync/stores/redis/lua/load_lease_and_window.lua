-- KEYS: the lease, the session's active set (one server: two slots); ARGV: record key stem, window size
local found = lease_and_holder()
return {found[1], found[2], redis.call('ZREVRANGEBYSCORE', KEYS[2], '+inf', '-inf', 'LIMIT', 0, ARGV[2])}
