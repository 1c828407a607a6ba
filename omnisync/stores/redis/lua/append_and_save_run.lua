-- A run's messages and its record, both or neither (on one server: the keys are in two slots).
-- KEYS: active, inactive, meta, record, run index, its events.
-- ARGV: the record's save (_RUN_ARGS), the text in its data that stands for its first written
-- seq ("" for none), then the append's (from _RUN_ARGS + 2).
-- Returns the last seq written; -1 when the session is not listed yet; -2 when the record does
-- not fit. Nothing is written unless it returns a seq.
if redis.call('HEXISTS', KEYS[3], 'listed') == 0 and ARGV[RUN_ARGS + 3] ~= '1' then return -1 end
if not fits(4, 1) then return -2 end
local last = append(RUN_ARGS + 2)
local data = ARGV[3]
local marker = ARGV[RUN_ARGS + 1]
if marker ~= '' then
  local first = last - tonumber(ARGV[RUN_ARGS + 2]) * (#ARGV - RUN_ARGS - 5)
  local from, to = string.find(data, marker, 1, true)
  data = string.sub(data, 1, from - 1) .. '"first_written_seq":' .. first .. string.sub(data, to + 1)
end
save(4, 1, data)
return last
