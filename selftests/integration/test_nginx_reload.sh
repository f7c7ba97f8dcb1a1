#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# nginx reload forks new workers (the agent started first, nginx after it):
# requests served by the new workers are counted, including a reload in
# the middle of a wrk run.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
port_free $PROXY_PORT
start_agent
start_nginx
hey -n 500 -c 4 -host api.example.com "http://127.0.0.1:$PROXY_PORT/v1/status" >/dev/null
w1=$(nginx_workers)
nginx_reload
w2=$(nginx_workers)
log "workers $w1-> $w2"
hey -n 500 -c 4 -host api.example.com "http://127.0.0.1:$PROXY_PORT/v1/status" >/dev/null
hey -n 300 -c 4 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/cart/1" >/dev/null
compare_log --expect-total 1300
start_bg wrk wrk -t1 -c4 -d4s -s "$IT_DIR/wrk_mix.lua" "http://127.0.0.1:$PROXY_PORT/"
WRK=$LAST_PID
wait_log_lines "$NGINX_LOG" 4000 || fail "no load reached nginx"
nginx_reload
log "workers $(nginx_workers) after a reload under load"
wait "$WRK" || true
cat "$T/wrk.out"
hey -n 300 -c 4 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/cart/2" >/dev/null
compare_log
