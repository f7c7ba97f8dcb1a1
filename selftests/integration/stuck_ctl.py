#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hold connections to the agent's debug socket the way a broken client
does: SILENT connections that never send a command, and GREEDY ones that
ask for `series` and never read the answer (smallest receive buffer).
Prints "held N" once all are connected, then, per connection, when the
agent closes it ("closed I after S s"); exits when all are closed or after
--hold seconds."""
import argparse
import select
import socket
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("socket")
ap.add_argument("--silent", type=int, default=3)
ap.add_argument("--greedy", type=int, default=3)
ap.add_argument("--hold", type=float, default=30)
a = ap.parse_args()

conns = []
for i in range(a.silent + a.greedy):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    s.connect(a.socket)
    if i >= a.silent:
        s.sendall(b"--json series\n")
    conns.append(s)
start = time.monotonic()
print("held %d" % len(conns), flush=True)
open_ = set(range(len(conns)))
while open_ and time.monotonic() - start < a.hold:
    # a closed connection shows as readable with EOF (or a reset); read
    # only from silent ones, and from greedy ones just to see EOF later
    r, _, _ = select.select([conns[i] for i in open_ if i < a.silent], [], [], 0.2)
    for s in r:
        i = conns.index(s)
        try:
            if s.recv(4096) == b"":
                print("closed %d after %.1f s" % (i, time.monotonic() - start), flush=True)
                open_.discard(i)
        except OSError:
            open_.discard(i)
sys.exit(0)
