#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A browser through the gateway over TLS + HTTP/2 (gates
# TLSCapture and HTTP2): headless Chromium loads pages with a script and 8
# images each from nginx (ALPN h2, its own HPACK encoder, many streams on
# one connection, and whatever else a browser asks for, such as
# /favicon.ico). Every request nginx logged is counted by route, downstream
# and upstream, and every one of them was an HTTP/2 stream.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
command -v chromium >/dev/null || fail "chromium is missing (deploy/install-deps.sh installs it)"
use_manifests base
start_backends
NGINX_TLS_PORT=28443
NGINX_TLS_H2=1
port_free $NGINX_TLS_PORT
make_cert
start_nginx
wait_for 10 listening $NGINX_TLS_PORT || fail "nginx did not listen with TLS"
start_agent --feature-gates=TLSCapture=true,HTTP2=true

for i in 1 2 3; do
	timeout 60 chromium --headless=new --no-sandbox --disable-gpu \
		--disable-dev-shm-usage --ignore-certificate-errors \
		--host-resolver-rules="MAP www.shop.test 127.0.0.1" \
		--user-data-dir="$T/chromium$i" \
		--dump-dom "https://www.shop.test:$NGINX_TLS_PORT/cart/p$i/index.html?page=8" \
		>"$T/dom$i.html" 2>"$T/chromium$i.err" ||
		fail "chromium failed: $(tail -3 "$T/chromium$i.err")"
	[ "$(grep -o '<img' "$T/dom$i.html" | wc -l)" = 8 ] ||
		fail "page $i did not load: $(head -c 300 "$T/dom$i.html")"
done
# 3 pages, 3 scripts, 24 images at least (plus what else Chromium asked)
wait_log_lines "$NGINX_LOG" 30 || fail "nginx logged $(log_lines "$NGINX_LOG")"
stable() { local n; n=$(log_lines "$NGINX_LOG"); sleep 1; [ "$(log_lines "$NGINX_LOG")" = "$n" ]; }
wait_for 20 stable || fail "nginx's log keeps growing"
total=$(log_lines "$NGINX_LOG")
log "nginx logged $total requests of Chromium"
$PY "$IT_DIR/mmcheck.py" compare --url "$METRICS_URL" --log "$NGINX_LOG" --no-latency ||
	fail "the agent's counts differ from nginx's log (above)"
expect_metric "$total" "HTTP/2 streams (every request was one)" milometer_http2_streams_total result=exchange
stop_agent
log "browser over h2 ok"
