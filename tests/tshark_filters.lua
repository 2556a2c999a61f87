-- Used by tests/test_filter.py: one tshark pass evaluates many display filters.
-- WF_FILTERS names a file with one display filter per line; for each packet a filter
-- matches, "<line number> <packet number>" is written to WF_OUT (a filter tshark rejects
-- writes "<line number> ERROR <message>").  Each filter is a tap (Listener) with that filter,
-- which tshark primes and evaluates exactly as it does -Y.
local exprs = {}
for line in io.lines(os.getenv("WF_FILTERS")) do table.insert(exprs, line) end
local out = io.open(os.getenv("WF_OUT"), "w")
for i, e in ipairs(exprs) do
  local ok, l = pcall(Listener.new, "frame", e)
  if ok then
    l.packet = function(pinfo, tvb) out:write(i, " ", pinfo.number, "\n") end
  else
    out:write(i, " ERROR ", (tostring(l):gsub("\n", " ")), "\n")
  end
end
