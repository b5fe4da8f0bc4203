-- wrk script for the nginx reference: GET the static copy of the tools/call response and
-- count answers that are not it as errors.
bad = 0
local threads = {}
function setup(thread) table.insert(threads, thread) end
function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"structuredContent":{"result":"high"}', 1, true) then bad = bad + 1 end
end
function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + (t:get("bad") or 0) end
  io.write(string.format("BAD %d\n", total))
end
