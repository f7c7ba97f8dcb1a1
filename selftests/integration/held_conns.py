#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Connections caught mid-request: N keep-alive connections to HOST:PORT,
each with a request sent in part and held open, in turns: a GET head all
but its final CRLF; a GET head all but its last header line; a POST head
and half its 1000-byte body. Prints
"held N" once all are open and sent, then waits for a line on stdin;
then finishes every head, reads every response, sends one more whole
request on each connection, reads those, and prints
"done first=A second=B" (responses read per round; statuses in the log).

usage: held_conns.py HOST:PORT VHOST PATH N
"""
import selectors
import socket
import sys


def read_response(s):
    """One HTTP/1.1 response with Content-Length or chunked body; status."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            raise EOFError("closed before a response head")
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(b":")
        hdrs[k.strip().lower()] = v.strip()
    if b"content-length" in hdrs:
        need = int(hdrs[b"content-length"])
        while len(rest) < need:
            d = s.recv(65536)
            if not d:
                raise EOFError("closed inside a body")
            rest += d
    elif hdrs.get(b"transfer-encoding", b"").lower() == b"chunked":
        while not rest.endswith(b"0\r\n\r\n"):
            d = s.recv(65536)
            if not d:
                raise EOFError("closed inside a chunked body")
            rest += d
    return status


def main():
    addr, vhost, path, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    host, port = addr.rsplit(":", 1)
    head = ("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: held" % (path, vhost)).encode()
    post = ("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n"
            % (path, vhost)).encode() + b"p" * 1000
    parts = [(head, b"\r\n\r\n"),
             (head + b"\r\n", b"Accept: */*\r\n\r\n"),
             (post[:-500], post[-500:])]
    conns = []
    for i in range(n):
        s = socket.create_connection((host, int(port)), timeout=30)
        s.sendall(parts[i % 3][0])
        conns.append((s, parts[i % 3][1]))
    print("held %d" % len(conns), flush=True)
    sys.stdin.readline()
    first = second = 0
    for s, rest in conns:
        s.sendall(rest)
    for s, _ in conns:
        read_response(s)
        first += 1
    for s, _ in conns:
        s.sendall(head + b"\r\n\r\n")
    for s, _ in conns:
        read_response(s)
        second += 1
    for s, _ in conns:
        s.close()
    print("done first=%d second=%d" % (first, second), flush=True)


if __name__ == "__main__":
    main()
