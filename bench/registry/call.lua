-- wrk script: POST the collatz tool's arguments to the internal plain tool-call route of
-- one graph (PATHS unset) or of graphs chosen round-robin from PATHS (a file, one path a
-- line: more graphs than the cache holds). Answers other than 200 with "steps" count as BAD.
wrk.method = "POST"
wrk.body = '{"n": 27}'
wrk.headers["Content-Type"] = "application/json"
local paths = {}
local f = os.getenv("PATHS") and io.open(os.getenv("PATHS"))
if f then
  for line in f:lines() do table.insert(paths, line) end
  f:close()
end
local i = 0
local threads = {}
bad = 0
function setup(thread) table.insert(threads, thread) end
function init(args)
  bad = 0
  i = math.random(#paths > 0 and #paths or 1)
end
function request()
  if #paths == 0 then return wrk.format() end
  i = i % #paths + 1
  return wrk.format(nil, paths[i])
end
function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"steps":111', 1, true) then bad = bad + 1 end
end
function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + (t:get("bad") or 0) end
  io.write(string.format("BAD %d\n", total))
end
