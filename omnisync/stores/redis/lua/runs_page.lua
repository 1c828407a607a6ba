-- Runs of one kind after a cursor, in index order (score, then token): what a page of runs reads.
-- KEYS: run index; ARGV: record key stem, cursor score ("" from the start), cursor token,
-- limit, most index entries to read, kind, "1" to filter on status, status, "1" to filter
-- on session, session.
-- Returns {records' data, last entry read (score, token) or false, 1 if entries may follow}.
-- A record's status and session are hash fields; only one that has them is decoded for its kind.
local found, last_score, last_token = {}, false, false
local limit, scan = tonumber(ARGV[4]), tonumber(ARGV[5])
local function consider(token, score)
  last_score, last_token = score, token
  local fields = redis.call('HMGET', ARGV[1] .. token, 'data', 'status', 'session')
  if not fields[1] then
    redis.call('ZREM', KEYS[1], token)
  elseif (ARGV[7] ~= '1' or fields[2] == ARGV[8]) and (ARGV[9] ~= '1' or fields[3] == ARGV[10]) then
    local record = cjson.decode(fields[1])
    if (record['kind'] or 'run') == ARGV[6] and type(record['created_at']) == 'string' then found[#found + 1] = fields[1] end
  end
end
local read, min = 0, '-inf'
if ARGV[2] ~= '' then
  for _, token in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[2], ARGV[2])) do
    if #found == limit then return {found, last_score, last_token, 1} end
    if token > ARGV[3] then
      consider(token, ARGV[2])
      read = read + 1
    end
  end
  min = '(' .. ARGV[2]
end
local entries = redis.call('ZRANGEBYSCORE', KEYS[1], min, '+inf', 'WITHSCORES', 'LIMIT', 0, math.max(scan - read, 1))
for i = 1, #entries, 2 do
  if #found == limit then return {found, last_score, last_token, 1} end
  consider(entries[i], entries[i + 1])
end
return {found, last_score, last_token, #entries == 2 * math.max(scan - read, 1) and 1 or 0}
