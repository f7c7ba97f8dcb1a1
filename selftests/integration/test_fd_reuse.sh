#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# fd reuse: thousands of short connections (Connection: close) on both legs
# (no upstream keep-alive), so nginx reuses the same fd numbers for new
# sockets all the time; no state may leak from one connection to the next.
NGINX_UP_KEEPALIVE=off
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
start_agent
hey -n 3000 -c 4 -disable-keepalive -host api.example.com \
	"http://127.0.0.1:$PROXY_PORT/v1/status" >"$T/hey1.txt"
hey -n 1000 -c 4 -disable-keepalive -host foo.example.com \
	"http://127.0.0.1:$PROXY_PORT/x/s500" >"$T/hey2.txt"
hey -n 1000 -c 4 -disable-keepalive -host nohost.test \
	"http://127.0.0.1:$PROXY_PORT/" >"$T/hey3.txt"
hey -n 500 -c 4 -disable-keepalive -host www.shop.test \
	"http://127.0.0.1:$PROXY_PORT/cart/1" >"$T/hey4.txt"
conns=$(cut -f9 "$NGINX_LOG" | sort -u | wc -l)
log "client connections in the log: $conns"
[ "$conns" -ge 5000 ] || fail "only $conns connections: keep-alive was not disabled"
compare_log --expect-total 5500
