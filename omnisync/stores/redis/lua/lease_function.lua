-- KEYS: run index; ARGV: record key stem ("P:a:A:run:"), "1" to filter on status, status,
-- "1" to filter on session, session. Drops index entries whose record has expired.
local function lease_and_holder()
  local lease = redis.call('HGET', KEYS[1], 'data')
  if not lease then return {false, false} end
  local owner = cjson.decode(lease)['lease_owner']
  if type(owner) ~= 'string' then return {lease, false} end
  local hex = (owner:gsub('.', function(c) return string.format('%02x', string.byte(c)) end))
  return {lease, redis.call('HGET', ARGV[1] .. hex, 'data')}
end
