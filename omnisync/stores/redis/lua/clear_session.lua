-- KEYS: active, inactive, meta. The seq counter stays (seq never goes back), and so does "listed".
local count = redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('HDEL', KEYS[3], 'last')
return count
