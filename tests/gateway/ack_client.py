#!/usr/bin/env python3
"""ack_client.py — steady tools/call load that logs every call whose success it received.

usage: ack_client.py BASE_URL TENANT GRAPH KEY OUT_FILE FIRST_N [--threads N] [--slow N]
                     [--seconds S]

Each thread opens an MCP session on BASE_URL/mcp/TENANT/GRAPH and calls the tool `echo`
with {"n": unique integer} over one keep-alive connection; every answer that is a
success carrying its own n appends "ok N" to OUT_FILE (flushed at once), every refusal
"refused N STATUS". --slow threads call `slow` instead (logged "slow-ok" / "slow-err").
Runs until --seconds pass (0 = until the server goes away), then prints a summary line.
"""
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse

args = sys.argv[1:]
opts = {"--threads": 6, "--slow": 0, "--seconds": 0.0}
pos = []
i = 0
while i < len(args):
    if args[i] in opts:
        opts[args[i]] = type(opts[args[i]])(args[i + 1])
        i += 2
    else:
        pos.append(args[i])
        i += 1
base, tenant, graph, key, out_path, first_n = pos[0], pos[1], pos[2], pos[3], pos[4], int(pos[5])
url = urllib.parse.urlparse(base)
path = "/mcp/%s/%s" % (tenant, graph)
out_fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
deadline = time.time() + opts["--seconds"] if opts["--seconds"] > 0 else None
counts = {"ok": 0, "refused": 0, "errors": 0}
lock = threading.Lock()


def log(line):
    os.write(out_fd, (line + "\n").encode())


def post(conn, body, sid=None):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "Authorization": "Bearer " + key, "MCP-Protocol-Version": "2025-11-25"}
    if sid:
        h["Mcp-Session-Id"] = sid
    conn.request("POST", path, json.dumps(body), h)
    r = conn.getresponse()
    return r.status, r.getheader("Mcp-Session-Id"), r.read()


def answer_of(data):
    text = data.decode("utf-8", "replace")
    if text.startswith("event:") or text.startswith("data:"):  # SSE: the last data line
        lines = [l[5:].strip() for l in text.splitlines() if l.startswith("data:")]
        text = lines[-1] if lines else "{}"
    return json.loads(text)


def worker(idx, tool):
    n = first_n + idx * 1000000
    try:
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        st, sid, _ = post(conn, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "ack", "version": "1"}}})
        if st != 200 or not sid:
            raise OSError("initialize: HTTP %d" % st)
    except Exception:
        with lock:
            counts["errors"] += 1
        return
    while deadline is None or time.time() < deadline:
        n += 1
        try:
            st, _, data = post(conn, {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                                      "params": {"name": tool, "arguments": {"n": n}}}, sid)
        except Exception:  # the server went away (kill -9): stop
            with lock:
                counts["errors"] += 1
            return
        try:
            res = answer_of(data).get("result") or {}
            sc = res.get("structuredContent") or {}
            ok = st == 200 and not res.get("isError") and (tool != "echo" or sc.get("n") == n)
        except Exception:
            ok = False
        if tool == "echo":
            log(("ok %d" % n) if ok else ("refused %d %d" % (n, st)))
        else:
            log(("slow-ok %d" % n) if ok else ("slow-err %d %d" % (n, st)))
        with lock:
            counts["ok" if ok else "refused"] += 1
        if not ok and st == 503:
            time.sleep(0.02)  # honour the refusal a little (Retry-After is 1 s; tests are short)


threads = [threading.Thread(target=worker, args=(k, "echo"), daemon=True) for k in range(opts["--threads"])]
threads += [threading.Thread(target=worker, args=(opts["--threads"] + k, "slow"), daemon=True)
            for k in range(opts["--slow"])]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("ack_client: ok %(ok)d refused %(refused)d errors %(errors)d" % counts)
