#!/usr/bin/env python3
"""era_spy.py TARGET_BASE LOG — a recording HTTP proxy between graphgate and a downstream MCP
server: every request is forwarded to TARGET_BASE + path and answered with the whole
response, or an event stream (a subscriptions/listen answer) passed on as it comes, and one JSON line per
request goes to LOG: the HTTP method, the MCP-Protocol-Version, Mcp-Method, Mcp-Name and
Mcp-Session-Id headers, the JSON-RPC method of the body, the clientCapabilities of its
_meta, the names of its inputResponses and a subscriptions/listen's notifications filter. The Authorization header is
forwarded, never written. Prints "PORT n" once listening."""
import json, sys, threading, urllib.error, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TARGET, LOG = sys.argv[1].rstrip('/'), sys.argv[2]
lock = threading.Lock()
HOP = {'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host'}


class Spy(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *a):
        pass

    def forward(self):
        n = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(n) if n else None
        try:
            msg = json.loads(body) if body else {}
            rpc = msg.get('method')
            meta = (msg.get('params') or {}).get('_meta') or {}
        except (ValueError, AttributeError):
            rpc, meta = None, {}
        rec = {'http': self.command, 'rpc': rpc,
               'caps': meta.get('io.modelcontextprotocol/clientCapabilities'),
               'answers': sorted((msg.get('params') or {}).get('inputResponses') or {}) if isinstance(msg, dict) else [],
               'filter': (msg.get('params') or {}).get('notifications') if rpc == 'subscriptions/listen' else None}
        for h in ('MCP-Protocol-Version', 'Mcp-Method', 'Mcp-Name', 'Mcp-Session-Id'):
            rec[h.lower()] = self.headers.get(h)
        with lock, open(LOG, 'a') as f:
            f.write(json.dumps(rec) + '\n')
        req = urllib.request.Request(TARGET + self.path, data=body, method=self.command)
        for k, v in self.headers.items():
            if k.lower() not in HOP:
                req.add_header(k, v)
        try:
            r = urllib.request.urlopen(req, timeout=30)
            if (r.headers.get('Content-Type') or '').startswith('text/event-stream'):
                return self.stream(r)
            status, headers, data = r.status, r.headers.items(), r.read()
        except urllib.error.HTTPError as e:
            status, headers, data = e.code, e.headers.items(), e.read()
        self.send_response(status)
        for k, v in headers:
            if k.lower() not in HOP:
                self.send_header(k, v)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def stream(self, r):  # until either side closes; the end of the body is the connection's
        self.close_connection = True
        self.send_response(r.status)
        for k, v in r.headers.items():
            if k.lower() not in HOP:
                self.send_header(k, v)
        self.send_header('Connection', 'close')
        self.end_headers()
        try:
            while chunk := r.read1(65536):
                self.wfile.write(chunk)
                self.wfile.flush()
        except OSError:
            pass
        r.close()

    do_POST = do_GET = do_DELETE = forward


srv = ThreadingHTTPServer(('127.0.0.1', 0), Spy)
print('PORT', srv.server_address[1], flush=True)
srv.serve_forever()
