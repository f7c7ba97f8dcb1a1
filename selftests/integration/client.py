#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Scripted HTTP/1.1 client for the edge cases wrk and hey cannot make.

  client.py send ADDR --host H --path P [--method M] [-H 'K: V']...
            [--count N] [--pipeline] [--bytewise] [--body B] [--chunked]
            [--expect100] [--close]
      N requests on ONE connection; --pipeline writes all N in one send,
      --bytewise sends one byte per send (TCP_NODELAY). Prints
      "responses N statuses S,S,..." from the responses actually read.
  client.py abort ADDR --host H --path P --after-ms M [--rst]
      sends a request, waits M ms, closes before the response.
  client.py garbage ADDR --kind random|tls|binary --count N
      connections that send non-HTTP bytes, then close.
"""
import argparse
import os
import socket
import struct
import sys
import time


def connect(addr):
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Reader:
    def __init__(self, sock):
        self.s = sock
        self.buf = b""

    def _fill(self):
        d = self.s.recv(65536)
        if not d:
            raise EOFError("connection closed by the proxy")
        self.buf += d

    def line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def exact(self, n):
        while len(self.buf) < n:
            self._fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def response(self, method):
        """One final response; returns (status, interim count)."""
        interim = 0
        while True:
            status = int(self.line().split()[1])
            hdrs = {}
            while True:
                ln = self.line()
                if not ln:
                    break
                k, v = ln.split(b":", 1)
                hdrs[k.strip().lower()] = v.strip()
            if 100 <= status < 200:
                interim += 1
                continue
            break
        if method == "HEAD" or status in (204, 304):
            return status, interim
        if b"chunked" in hdrs.get(b"transfer-encoding", b"").lower():
            while True:
                n = int(self.line().split(b";")[0], 16)
                if n == 0:
                    while self.line():
                        pass
                    break
                self.exact(n + 2)
        elif b"content-length" in hdrs:
            self.exact(int(hdrs[b"content-length"]))
        else:
            while True:
                try:
                    self._fill()
                except EOFError:
                    break
            self.buf = b""
        return status, interim


def build(a, i):
    hdrs = list(a.header)
    # Host first, as most clients send it, unless asked to put it last
    # (behind a big header: the agent's capture may end before it)
    if a.host_last:
        hdrs.append("Host: %s" % a.host)
    else:
        hdrs.insert(0, "Host: %s" % a.host)
    body = a.body.encode() if a.body is not None else None
    if body is not None and a.chunked:
        hdrs.append("Transfer-Encoding: chunked")
        # several chunks so the proxy reads the body in pieces
        parts = [body[j:j + 7] for j in range(0, len(body), 7)]
        body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + \
            b"0\r\n\r\n"
    elif body is not None:
        hdrs.append("Content-Length: %d" % len(body))
    if a.expect100:
        hdrs.append("Expect: 100-continue")
    if a.close and i == a.count - 1:
        hdrs.append("Connection: close")
    head = ("%s %s HTTP/1.1\r\n%s\r\n\r\n" % (a.method, a.path,
                                              "\r\n".join(hdrs))).encode()
    return head, body or b""


def send_bytewise(s, data):
    for j in range(len(data)):
        s.send(data[j:j + 1])
        # each byte its own segment and, mostly, its own read on the proxy
        time.sleep(0.0005)


def cmd_send(a):
    s = connect(a.addr)
    r = Reader(s)
    statuses, interim = [], 0
    reqs = [build(a, i) for i in range(a.count)]
    if a.pipeline:
        s.sendall(b"".join(h + b for h, b in reqs))
        for _ in reqs:
            st, it = r.response(a.method)
            statuses.append(st)
            interim += it
    else:
        for head, body in reqs:
            if a.bytewise:
                send_bytewise(s, head + body)
            elif a.expect100:
                s.sendall(head)
                # wait for "100 Continue" before the body, as curl does
                ln = r.line()
                if b" 100 " not in ln + b" ":
                    raise SystemExit("expected 100 Continue, got %r" % ln)
                while r.line():
                    pass
                interim += 1
                s.sendall(body)
            else:
                s.sendall(head + body)
            st, it = r.response(a.method)
            statuses.append(st)
            interim += it
    s.close()
    print("responses %d interim %d statuses %s" % (
        len(statuses), interim, ",".join(map(str, statuses))))
    return 0


def cmd_abort(a):
    s = connect(a.addr)
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (a.path, a.host))
              .encode())
    time.sleep(a.after_ms / 1000.0)
    if a.rst:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     struct.pack("ii", 1, 0))
    s.close()
    return 0


# A TLS 1.2 ClientHello as a browser would open with on a plain HTTP port.
def client_hello():
    rnd = os.urandom(32)
    suites = b"\x00\x02\xc0\x2f"
    sni = b"api.example.com"
    ext_sni = struct.pack("!HHHBH", 0, len(sni) + 5, len(sni) + 3, 0,
                          len(sni)) + sni
    body = b"\x03\x03" + rnd + b"\x00" + suites + b"\x01\x00" + \
        struct.pack("!H", len(ext_sni)) + ext_sni
    hs = b"\x01" + struct.pack("!I", len(body))[1:] + body
    return b"\x16\x03\x01" + struct.pack("!H", len(hs)) + hs


def cmd_garbage(a):
    for i in range(a.count):
        s = connect(a.addr)
        if a.kind == "tls":
            data = client_hello()
        elif a.kind == "binary":
            data = bytes(range(256)) * 4
        else:
            data = os.urandom(700)
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            while s.recv(65536):
                pass
        except OSError:
            pass  # the proxy may reset a connection it cannot parse
        s.close()
    print("sent %d" % a.count)
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("addr")
    s.add_argument("--host", required=True)
    s.add_argument("--path", default="/")
    s.add_argument("--method", default="GET")
    s.add_argument("-H", "--header", action="append", default=[])
    s.add_argument("--count", type=int, default=1)
    s.add_argument("--pipeline", action="store_true")
    s.add_argument("--bytewise", action="store_true")
    s.add_argument("--body")
    s.add_argument("--chunked", action="store_true")
    s.add_argument("--expect100", action="store_true")
    s.add_argument("--close", action="store_true")
    s.add_argument("--host-last", action="store_true")
    b = sub.add_parser("abort")
    b.add_argument("addr")
    b.add_argument("--host", required=True)
    b.add_argument("--path", default="/")
    b.add_argument("--after-ms", type=int, default=200)
    b.add_argument("--rst", action="store_true")
    g = sub.add_parser("garbage")
    g.add_argument("addr")
    g.add_argument("--kind", default="random",
                   choices=("random", "tls", "binary"))
    g.add_argument("--count", type=int, default=1)
    a = p.parse_args()
    return {"send": cmd_send, "abort": cmd_abort,
            "garbage": cmd_garbage}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
