#!/usr/bin/env python3
"""slowloris.py HOST PORT COUNT HOLD_S [SOURCES]: open COUNT connections to HOST:PORT (loopback
only), each sending a request's headers one line per second and never finishing them, for
HOLD_S seconds. Connections come from SOURCES loopback addresses (127.0.0.2, 127.0.0.3, ...;
default 1). Prints one JSON line: how many the server accepted and kept (it may refuse them at
once: per-address cap), how many it cut later (receive deadline) and how many were still open
at the end. Bounded: COUNT <= 2000, HOLD_S <= 30."""
import json
import select
import socket
import sys
import time

host, port, count, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
sources = int(sys.argv[5]) if len(sys.argv) > 5 else 1
assert host.startswith("127.") and 0 < count <= 2000 and 0 < hold <= 30 and 0 < sources <= 200

socks, failed = [], 0
for i in range(count):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.%d" % (2 + i % sources), 0))
        s.settimeout(2)
        s.connect((host, port))
        s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        s.setblocking(False)
        socks.append(s)
    except OSError:
        failed += 1
        s.close()

def closed_by_peer(s):
    try:
        p = select.poll()
        p.register(s, select.POLLIN)
        if not p.poll(0):
            return False
        return s.recv(4096) == b""
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True

start = time.monotonic()
open_socks = list(socks)
refused_at_once = None
cut_after = []  # seconds after start at which connections were found closed
while time.monotonic() - start < hold:
    time.sleep(0.25)
    still = []
    for s in open_socks:
        if closed_by_peer(s):
            cut_after.append(time.monotonic() - start)
            s.close()
            continue
        try:
            s.send(b"X-Slow: %d\r\n" % int(time.monotonic()))
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            cut_after.append(time.monotonic() - start)
            s.close()
            continue
        still.append(s)
    open_socks = still
    if refused_at_once is None:
        refused_at_once = len(cut_after)  # closed within the first quarter second: refused
for s in open_socks:
    s.close()
print(json.dumps({"attempted": count, "connect_failed": failed, "refused_at_once": refused_at_once or 0,
                  "kept": len(socks) - (refused_at_once or 0), "cut_later": len(cut_after) - (refused_at_once or 0),
                  "open_at_end": len(open_socks),
                  "last_cut_s": round(max(cut_after), 2) if cut_after else 0}))
