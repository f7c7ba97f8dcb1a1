#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Keep-alive HTTPS connections, each request alone on the wire.

usage: tls_keepalive.py HOST PORT SNI PATH CONNS ROUNDS
Opens CONNS TLS connections (HTTP/1.1, one after another), sends one GET on
each, then ROUNDS-1 more rounds over the same connections, one request at a
time, so that between its requests each connection's server side sits idle
in a read. The Host header is SNI:PORT, as curl sends it (caddy picks a site's access
log by it). Prints "N ok" (responses with status 200); exit 1 on any other.
"""
import http.client
import socket
import ssl
import sys


def get(sock, host, path):
    sock.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, host)).encode())
    r = http.client.HTTPResponse(sock)
    r.begin()
    r.read()
    return r.status


def main():
    host, port, sni, path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    conns, rounds = int(sys.argv[5]), int(sys.argv[6])
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["http/1.1"])
    socks = []
    ok = 0
    for rnd in range(rounds):
        for i in range(conns):
            if rnd == 0:
                raw = socket.create_connection((host, port), timeout=30)
                socks.append(ctx.wrap_socket(raw, server_hostname=sni))
            st = get(socks[i], "%s:%d" % (sni, port), "%s/r%dc%d" % (path, rnd, i))
            if st != 200:
                print("connection %d round %d: status %d" % (i, rnd, st), file=sys.stderr)
                return 1
            ok += 1
    for s in socks:
        s.close()
    print("%d ok" % ok)
    return 0


if __name__ == "__main__":
    sys.exit(main())
