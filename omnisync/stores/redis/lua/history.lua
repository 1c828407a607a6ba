-- KEYS: active, inactive. Both sets at one moment, so a fold in between cannot show a message twice.
return {redis.call('ZRANGE', KEYS[1], 0, -1), redis.call('ZRANGE', KEYS[2], 0, -1)}
