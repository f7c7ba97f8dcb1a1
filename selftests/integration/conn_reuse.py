#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A new socket at the address of one whose close the agent missed.

conn_reuse.py server PORT
    One connection at a time: read a request head, answer 200 with an
    empty body, shut the write side (the agent ends the connection at
    FIN_WAIT1), read to end of stream, close. Prints "listening", then
    "answered N" after each request.

conn_reuse.py drive PORT PIN_DIR TRIES -- BPFTOOL...
    With the agent in sys_exit mode (its state in mm_conns, by socket
    address), TRIES times at most: connection A, its mm_conns entry read
    (finished by the server's shutdown) and, once A is closed and its entry
    gone, written back: what a missed tcp_destroy_sock leaves. Then
    connection B. When B's socket took A's address (the kernel's slab hands
    a freed socket's memory to the next one on the same CPU, so both sides
    run on one CPU), B must have state of its own (a new conn_id), not A's
    finished one. An attempt where B landed elsewhere removes the written
    entry and tries again. Prints what it saw; exit 0 when B was seen at
    A's address with its own state, 1 when it took A's, 3 when no attempt
    reused the address.
"""
import json
import socket
import subprocess
import sys
import time

REQ = b"GET /reuse HTTP/1.1\r\nHost: www.shop.test\r\n\r\n"
RESP = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"


def read_head(s):
    buf = b""
    while b"\r\n\r\n" not in buf:
        b = s.recv(4096)
        if not b:
            return None
        buf += b
    return buf


def serve(port):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(8)
    print("listening", flush=True)
    n = 0
    while True:
        c, _ = ls.accept()
        if read_head(c) is not None:
            c.sendall(RESP)
            n += 1
            print("answered", n, flush=True)
            c.shutdown(socket.SHUT_WR)
            while c.recv(4096):
                pass
        c.close()


class Conns:
    """mm_conns of the test agent, by its pin, through bpftool."""

    def __init__(self, bpftool, pin):
        self.bpftool, self.pin = bpftool, pin

    def run(self, *args):
        return subprocess.run(self.bpftool + list(args), check=True,
                              capture_output=True, text=True).stdout

    def dump(self):
        out = []
        for e in json.loads(self.run("-j", "map", "dump", "pinned", self.pin)):
            f = e.get("formatted", {})
            out.append((e["key"], e["value"], f.get("key"),
                        f.get("value", {}).get("conn_id"),
                        f.get("value", {}).get("finished")))
        return out

    def update(self, key, value):
        self.run("map", "update", "pinned", self.pin, "key", "hex", *hexes(key),
                 "value", "hex", *hexes(value))

    def delete(self, key):
        self.run("map", "delete", "pinned", self.pin, "key", "hex", *hexes(key))

    def wait(self, pred, what):
        end = time.monotonic() + 10
        while time.monotonic() < end:
            d = self.dump()
            if pred(d):
                return d
            time.sleep(0.02)
        raise SystemExit(f"conn_reuse: timed out waiting for {what}: {d}")


def hexes(bs):
    return [b[2:] if b.startswith("0x") else b for b in bs]


def exchange(port, s=None):
    if s is None:
        s = socket.socket()
    s.connect(("127.0.0.1", port))
    s.sendall(REQ)
    if read_head(s) is None:
        raise SystemExit("conn_reuse: the server closed before answering")
    return s


def drive(port, pin, tries, bpftool):
    m = Conns(bpftool, pin)
    if m.dump():
        raise SystemExit(f"conn_reuse: mm_conns not empty at the start: {m.dump()}")
    for i in range(1, tries + 1):
        a = exchange(port)
        # the server shut its side: A is finished, not yet destroyed
        while a.recv(4096):
            pass
        d = m.wait(lambda d: len(d) == 1 and d[0][4] == 1,
                   "connection A's entry, finished")
        key, value, addr, a_id, _ = d[0]
        # which of A's two sockets is freed last varies: B's own socket
        # made before A's close (or after), so that the server's socket
        # for B is the next allocation
        early = socket.socket() if i % 2 else None
        a.close()
        m.wait(lambda d: not d, "connection A's entry to go at its close")
        m.update(key, value)
        # answered: the server's read of B's request was seen (or not)
        b = exchange(port, early)
        d = m.dump()
        at_a = [e for e in d if e[2] == addr]
        print(f"try {i}: A at {addr:#x} conn_id {a_id:#x}; after B: "
              + ", ".join(f"{e[2]:#x} conn_id {e[3]:#x} finished {e[4]}"
                          for e in d), flush=True)
        if len(d) == 1 and at_a and at_a[0][3] == a_id:
            print("B's socket took A's address and A's finished state: "
                  "its request is not seen", flush=True)
            b.close()
            return 1
        if len(d) == 1 and at_a and at_a[0][3] != a_id:
            print(f"B's socket took A's address with state of its own "
                  f"(conn_id {at_a[0][3]:#x})", flush=True)
            while b.recv(4096):
                pass
            b.close()
            m.wait(lambda d: not d, "connection B's entry to go at its close")
            return 0
        # B elsewhere: A's written entry is still there
        m.delete(key)
        while b.recv(4096):
            pass
        b.close()
        m.wait(lambda d: not d, "connection B's entry to go at its close")
    print(f"no socket took a closed one's address in {tries} tries", flush=True)
    return 3


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "server":
        serve(int(sys.argv[2]))
        return 0
    if len(sys.argv) >= 7 and sys.argv[1] == "drive" and sys.argv[5] == "--":
        return drive(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]),
                     sys.argv[6:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
