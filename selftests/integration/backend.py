#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""HTTP/1.1 test backend: keep-alive, chunked bodies both ways, 100-continue.

The query string steers each response, so one backend serves every test:
  status=N      response status (default 200)
  delay_ms=N    wait before answering (slow backends, mid-request close)
  chunked=1     send the body with Transfer-Encoding: chunked, in pieces
  size=N        body bytes (default: a short text naming the request)
  page=N        an HTML page with N images and a script under the same
                path prefix (a browser's subresources)

usage: backend.py PORT [--name NAME]
Prints "ready PORT" on stdout once listening.
"""
import http.server
import socket
import socketserver
import sys
import time
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mm-backend"
    sys_version = ""

    def setup(self):
        super().setup()
        # headers and body go out in separate writes: without NODELAY,
        # Nagle plus the proxy's delayed ACK adds 40 ms to each response
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt, *args):
        pass  # the proxy's access log is the ground truth, not ours

    def _read_body(self):
        te = self.headers.get("Transfer-Encoding", "")
        if "chunked" in te.lower():
            total = 0
            while True:
                line = self.rfile.readline()
                if not line:
                    return total
                n = int(line.split(b";")[0].strip() or b"0", 16)
                if n == 0:
                    # trailers end with an empty line
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return total
                total += len(self.rfile.read(n))
                self.rfile.readline()
        n = int(self.headers.get("Content-Length", "0") or 0)
        if n:
            self.rfile.read(n)
        return n

    def _answer(self, with_body=True):
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        got = self._read_body()
        status = int(q.get("status", "200"))
        delay = int(q.get("delay_ms", "0"))
        if delay:
            time.sleep(delay / 1000.0)
        ctype = "text/plain"
        if "page" in q:
            base = url.path.rsplit("/", 1)[0]
            subs = "".join('<img src="%s/img%d.png?size=%d">' % (base, i, 200 + i)
                           for i in range(int(q["page"])))
            body = ('<!doctype html><html><head><script src="%s/app.js?size=64">'
                    '</script></head><body>%s</body></html>' % (base, subs)).encode()
            ctype = "text/html"
        elif "size" in q:
            body = b"x" * int(q["size"])
        else:
            body = ("%s %s %s body=%d\n" % (self.server.name, self.command,
                                            url.path, got)).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        if q.get("chunked") == "1":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if with_body:
                # several chunks, flushed apart, so the proxy sees the
                # response split across reads
                step = max(1, len(body) // 3)
                for i in range(0, len(body), step):
                    part = body[i:i + step]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if with_body:
                self.wfile.write(body)
        self.wfile.flush()

    def do_GET(self):
        self._answer()

    def do_HEAD(self):
        self._answer(with_body=False)

    do_POST = do_GET
    do_PUT = do_GET
    do_DELETE = do_GET
    do_PATCH = do_GET
    do_OPTIONS = do_GET


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512


def main():
    port = int(sys.argv[1])
    srv = Server(("127.0.0.1", port), Handler)
    srv.name = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--name" \
        else "py"
    print("ready", port, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
