-- Several records of one agent, all or none: 0, or the position (from 1) of the first that does not fit.
local n = #KEYS / 3
for i = 0, n - 1 do
  if not fits(1 + 3 * i, 1 + RUN_ARGS * i) then return i + 1 end
end
for i = 0, n - 1 do save(1 + 3 * i, 1 + RUN_ARGS * i, ARGV[3 + RUN_ARGS * i]) end
return 0
