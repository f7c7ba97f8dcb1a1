#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""gRPC test server and client (Debian's python3-grpcio), no generated code.

  grpc_echo.py serve PORT          /mm.Echo/Call on 127.0.0.1:PORT (h2c):
                                   the request bytes name the answer: b"ok"
                                   -> OK, b"code N" -> status N (abort)
  grpc_echo.py call ADDR AUTHORITY CODE N
                                   N calls on one channel asking for status
                                   CODE; prints "calls N codes {code: count}"
                                   as the client saw them
"""
import collections
import sys
from concurrent import futures

import grpc

METHOD = "/mm.Echo/Call"


def handler(request, context):
    if request.startswith(b"code "):
        code = int(request[5:])
        if code != 0:
            status = next(s for s in grpc.StatusCode if s.value[0] == code)
            context.abort(status, "asked for %d" % code)
    return b"pong:" + request


def serve(port):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    rpc = grpc.unary_unary_rpc_method_handler(handler)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("mm.Echo", {"Call": rpc}),))
    server.add_insecure_port("127.0.0.1:%d" % port)
    server.start()
    print("ready", flush=True)
    server.wait_for_termination()


def call(addr, authority, code, n):
    opts = [("grpc.default_authority", authority)]
    seen = collections.Counter()
    with grpc.insecure_channel(addr, options=opts) as ch:
        stub = ch.unary_unary(METHOD)
        for _ in range(n):
            try:
                stub(b"code %d" % code, timeout=10)
                seen[0] += 1
            except grpc.RpcError as e:
                seen[e.code().value[0]] += 1
    print("calls %d codes %s" % (n, dict(sorted(seen.items()))))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    elif len(sys.argv) == 6 and sys.argv[1] == "call":
        call(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
