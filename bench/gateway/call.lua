-- wrk script: POST one tools/call of the switch example per request; counts answers that
-- are not the expected result as errors (printed by done()).
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_switch","arguments":{"value":42}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
if os.getenv("KEY") and os.getenv("KEY") ~= "" then wrk.headers["Authorization"] = "Bearer " .. os.getenv("KEY") end
if os.getenv("SID") and os.getenv("SID") ~= "" then wrk.headers["Mcp-Session-Id"] = os.getenv("SID") end
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"

bad = 0
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) bad = 0 end
function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"structuredContent":{"result":"high"}', 1, true) then bad = bad + 1 end
end
function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + (t:get("bad") or 0) end
  io.write(string.format("BAD %d\n", total))
end
