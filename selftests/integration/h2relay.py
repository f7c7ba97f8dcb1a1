#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A TCP relay that records what it carries, for the HTTP/2 decoder tests.

Every accepted connection is relayed to the target and recorded as
OUTDIR/conn-N.cap: one record per recv(), "<dir> <ns> <len>\\n" then the bytes
(dir c = client -> server, s = server -> client), so the chunks are cut
where the kernel cut them, as the agent's capture would see them.

usage: h2relay.py LISTEN_PORT TARGET_PORT OUTDIR
Prints "ready LISTEN_PORT" once listening.
"""
import os
import selectors
import socket
import sys
import time


def main():
    lport, tport, outdir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    os.makedirs(outdir, exist_ok=True)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", lport))
    ls.listen(64)
    ls.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(ls, selectors.EVENT_READ, None)
    print("ready", lport, flush=True)
    n = 0
    while True:
        for key, _ in sel.select():
            if key.data is None:
                c, _ = ls.accept()
                s = socket.create_connection(("127.0.0.1", tport))
                for x in (c, s):
                    x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                n += 1
                f = open(os.path.join(outdir, "conn-%d.cap" % n), "wb")
                st = {"f": f, "open": 2}
                sel.register(c, selectors.EVENT_READ, (b"c", c, s, st))
                sel.register(s, selectors.EVENT_READ, (b"s", s, c, st))
                continue
            d, src, dst, st = key.data
            try:
                buf = src.recv(65536)
            except OSError:
                buf = b""
            if buf:
                st["f"].write(b"%s %d %d\n" % (d, time.time_ns(), len(buf)))
                st["f"].write(buf)
                st["f"].flush()
                try:
                    dst.sendall(buf)
                except OSError:
                    pass
                continue
            sel.unregister(src)
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            st["open"] -= 1
            if st["open"] == 0:
                # both directions ended: the capture is complete
                st["f"].write(b"x %d 0\n" % time.time_ns())
                st["f"].close()
                src.close()
                dst.close()


if __name__ == "__main__":
    main()
