-- KEYS: active, inactive, meta. Returns the message count and the last write (µs or "").
return {redis.call('ZCARD', KEYS[1]) + redis.call('ZCARD', KEYS[2]), redis.call('HGET', KEYS[3], 'last') or ''}
