#!/usr/bin/env python3
"""otlp_receiver.py — a small OTLP/HTTP (JSON) trace receiver for the tests, on loopback.

  otlp_receiver.py OUT.jsonl ok|hang PORTFILE

Binds 127.0.0.1 on a port the kernel picks and writes it to PORTFILE. ok: every POST to
/v1/traces must be an OTLP ExportTraceServiceRequest in JSON (Content-Type
application/json); each one is appended to OUT.jsonl as one line and answered 200 with an
empty ExportTraceServiceResponse; anything else gets 400. hang: requests are read and never
answered (a collector that stopped responding)."""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

out_path, mode, port_path = sys.argv[1], sys.argv[2], sys.argv[3]
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        if mode == "hang":
            time.sleep(3600)
            return
        ok = self.path == "/v1/traces" and self.headers.get("Content-Type", "").startswith("application/json")
        try:
            req = json.loads(body)
            ok = ok and isinstance(req.get("resourceSpans"), list)
        except ValueError:
            ok = False
        if not ok:
            self.send_response(400)
            self.end_headers()
            return
        with lock, open(out_path, "a") as f:
            f.write(json.dumps({"headers": {k.lower(): v for k, v in self.headers.items()}, "body": req}) + "\n")
        reply = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
with open(port_path + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(port_path + ".tmp", port_path)
srv.serve_forever()
