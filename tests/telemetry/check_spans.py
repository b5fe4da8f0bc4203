#!/usr/bin/env python3
"""check_spans.py SPANS.jsonl TRACE_ID CLIENT_SPAN_ID RESULT.json SERVICE KEY_ID

Checks what the OTLP receiver got for one call of the `traced` tool (otel.sh): the server
span under the client's span, one span per node under it, one client span per downstream
call under its mcp node, attributes, timing that nests, and that the downstream servers saw
the client spans' context (stdio: params._meta, HTTP: the traceparent header). Prints
ok/not ok lines and "N passed, N failed"."""
import json
import sys

spans_path, trace_id, client_parent, result_path, service, key_id = sys.argv[1:7]
passed = failed = 0


def check(desc, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok - " + desc)
    else:
        failed += 1
        print("not ok - " + desc + (": " + str(detail)[:400] if detail else ""))


def attrs(s):
    out = {}
    for kv in s.get("attributes", []):
        v = kv["value"]
        out[kv["key"]] = next(iter(v.values()))
    return out


spans, services = [], set()
for line in open(spans_path):
    req = json.loads(line)["body"]
    for rs in req["resourceSpans"]:
        for kv in rs["resource"]["attributes"]:
            if kv["key"] == "service.name":
                services.add(kv["value"]["stringValue"])
        for ss in rs["scopeSpans"]:
            spans += ss["spans"]
mine = [s for s in spans if s["traceId"] == trace_id]
check("resource service.name is the configured one", services == {service}, services)
servers = [s for s in mine if s["kind"] == 2]
check("one server span in the client's trace", len(servers) == 1, [s["name"] for s in mine])
if not servers:
    print("%d passed, %d failed" % (passed, failed + 1))
    sys.exit(1)
srv = servers[0]
a = attrs(srv)
check("server span: child of the client's span", srv.get("parentSpanId") == client_parent, srv.get("parentSpanId"))
check("server span: name and attributes (tenant, graph, version, tool, key id, status)",
      srv["name"] == "tools/call traced" and a.get("graphgate.tenant") == "acme" and a.get("graphgate.graph") == "traced"
      and a.get("graphgate.graph.version") == "1" and a.get("graphgate.tool") == "traced"
      and a.get("graphgate.key_id") == key_id and a.get("graphgate.status") == "ok" and srv["status"]["code"] == 1, (srv["name"], a))
check("server span: tracestate passed on", srv.get("traceState") == "gg=t61", srv.get("traceState"))

nodes = sorted([s for s in mine if s["kind"] == 1], key=lambda s: int(s["startTimeUnixNano"]))
want = [("entry", "entry"), ("shape", "transform"), ("route", "switch"), ("via_stdio", "mcp"), ("via_http", "mcp"),
        ("collect", "transform"), ("exit", "exit")]
got = [(attrs(s).get("graphgate.node.id"), attrs(s).get("graphgate.node.type")) for s in nodes]
check("one span per node, in order, with id and type", got == want, got)
check("node spans are children of the server span", all(s.get("parentSpanId") == srv["spanId"] for s in nodes))
by_id = {attrs(s).get("graphgate.node.id"): s for s in nodes}

clients = [s for s in mine if s["kind"] == 3]
check("one client span per downstream call", len(clients) == 2, [s["name"] for s in clients])
cs = {attrs(s).get("graphgate.mcp.transport"): s for s in clients}
for transport, node in (("stdio", "via_stdio"), ("http", "via_http")):
    c, n = cs.get(transport), by_id.get(node)
    ok = c is not None and n is not None and c.get("parentSpanId") == n["spanId"]
    check("%s client span: child of node %s, server and tool named" % (transport, node),
          ok and attrs(c).get("graphgate.mcp.server") == "echo_" + transport and attrs(c).get("graphgate.mcp.tool") == "echo",
          c and attrs(c))


def t(s, k):
    return int(s[k + "TimeUnixNano"])


SLACK = 2_000_000  # ns: wall clocks read on different threads
nested = all(t(s, "start") >= t(srv, "start") - SLACK and t(s, "end") <= t(srv, "end") + SLACK for s in nodes)
check("node spans lie within the server span", nested)
seq = all(t(nodes[i + 1], "start") >= t(nodes[i], "end") - SLACK for i in range(len(nodes) - 1))
check("node spans follow one another (no overlap)", seq)
inside = all(c["parentSpanId"] in [n["spanId"] for n in nodes] and
             t(c, "start") >= t(next(n for n in nodes if n["spanId"] == c["parentSpanId"]), "start") - SLACK and
             t(c, "end") <= t(next(n for n in nodes if n["spanId"] == c["parentSpanId"]), "end") + SLACK for c in clients)
check("client spans lie within their node's span (timing across the suspended run)", inside)
dur = (t(srv, "end") - t(srv, "start")) / 1e6
check("server span duration plausible (0 < %.1f ms < 30000)" % dur, 0 < dur < 30000)
mcp_dur = min((t(c, "end") - t(c, "start")) for c in clients) / 1e6
check("downstream calls took time (%.3f ms > 0)" % mcp_dur, mcp_dur > 0)

def answer(path):
    # a call that outlives the gateway's inline wait is answered as an event stream (the
    # client accepted one): its last data line is the JSON-RPC answer
    text = open(path).read()
    try:
        return json.loads(text)
    except ValueError:
        return json.loads([l[5:] for l in text.splitlines() if l.startswith("data:") and l[5:].strip()][-1])
res = answer(result_path)["result"]["structuredContent"]
stdio_tp = (res.get("stdio") or {}).get("meta", {}).get("traceparent")
http_tp = (res.get("http") or {}).get("traceparent")
http_meta = (res.get("http") or {}).get("meta", {}) or {}
if "stdio" in cs:
    check("stdio server got the client span's context in params._meta",
          stdio_tp == "00-%s-%s-01" % (trace_id, cs["stdio"]["spanId"]), stdio_tp)
    check("... and the tracestate", (res.get("stdio") or {}).get("meta", {}).get("tracestate") == "gg=t61")
if "http" in cs:
    check("HTTP server got the client span's context as the traceparent header",
          http_tp == "00-%s-%s-01" % (trace_id, cs["http"]["spanId"]) and http_meta.get("traceparent") == http_tp, http_tp)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
