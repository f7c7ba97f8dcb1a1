#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Opens N keep-alive connections to the gateway, makes one request on each
(so the agent has seen and tracks every one), then keeps them all open and
idle until stdin closes. Prints "ready OK FAILED" once all are open.
For the bench's kernel-memory row.

  idle_conns.py HOST:PORT HTTP_HOST PATH N
"""
import socket
import sys


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    host, port = sys.argv[1].rsplit(":", 1)
    req = ("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" %
           (sys.argv[3], sys.argv[2])).encode()
    n = int(sys.argv[4])
    conns, failed = [], 0
    # in batches: requests of a batch in flight together, then the answers
    for start in range(0, n, 200):
        batch = []
        for _ in range(start, min(n, start + 200)):
            try:
                s = socket.create_connection((host, int(port)), timeout=10)
                s.sendall(req)
                batch.append(s)
            except OSError:
                failed += 1
        for s in batch:
            try:
                if not s.recv(4096).startswith(b"HTTP/1.1 200"):
                    failed += 1
                conns.append(s)
            except OSError:
                failed += 1
    print("ready %d %d" % (len(conns), failed), flush=True)
    sys.stdin.read()
    for s in conns:
        s.close()


if __name__ == "__main__":
    main()
