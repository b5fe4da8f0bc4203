-- wrk script for the gateway and registry benchmarks: POST BODY per request (default: one
-- tools/call of the switch example) to the URL, or to paths chosen round-robin from PATHS
-- (a file, one path a line: more graphs than the cache holds); answers other than 200
-- containing EXPECT count as errors (printed by done() as BAD n). KEY and SID, when set,
-- add the API key and the MCP session. METHOD=GET sends the same headers without a body
-- (floor.sh: GET /health, the cheapest answer graphgate gives).
wrk.method = os.getenv("METHOD") or "POST"
if wrk.method ~= "GET" then
  wrk.body = os.getenv("BODY") or '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_switch","arguments":{"value":42}}}'
end
local expect = os.getenv("EXPECT") or '"structuredContent":{"result":"high"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
if os.getenv("KEY") and os.getenv("KEY") ~= "" then wrk.headers["Authorization"] = "Bearer " .. os.getenv("KEY") end
if os.getenv("SID") and os.getenv("SID") ~= "" then wrk.headers["Mcp-Session-Id"] = os.getenv("SID") end
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"

local paths = {}
local f = os.getenv("PATHS") and io.open(os.getenv("PATHS"))
if f then
  for line in f:lines() do table.insert(paths, line) end
  f:close()
end
local i = 0
bad = 0
local threads = {}
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
  if status ~= 200 or not string.find(body, expect, 1, true) then bad = bad + 1 end
end
function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + (t:get("bad") or 0) end
  io.write(string.format("BAD %d\n", total))
end
