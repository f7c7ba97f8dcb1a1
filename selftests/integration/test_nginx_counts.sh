#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Real nginx (config generated from manifests/base by gen_nginx) in front of
# two backends, loaded with wrk (a Lua mix of hosts, paths, methods), hey
# (header match, slow requests) and curl. The agent's per-route, per-rule,
# per-status-class counts must equal nginx's access log exactly, upstream
# counts the log lines with an upstream, and latency sums nginx's timers.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
start_agent

# The agent's compiler (milometer explain) and the generated nginx config
# must agree on every URL the load uses, or the log is no ground truth.
for c in "GET api.example.com /v1/status" "POST api.example.com /v1/orders" \
	"GET api.example.com /v1/users" "DELETE api.example.com /v1/items/7" \
	"GET foo.example.com /anything" "GET bar.baz.example.com /s404" \
	"GET www.shop.test /" "GET www.shop.test /cart/1" "GET nohost.test /" \
	"GET www.shop.test /nope" "GET canary.example.com /c X-Canary:1"; do
	set -- $c
	hdr=()
	[ $# -lt 4 ] || hdr=(-H "${4%%:*}: ${4#*:}")
	want=$(explain "http://$2$3" -X "$1" "${hdr[@]}")
	n=$(log_lines "$NGINX_LOG")
	px "$2" "$3" -X "$1" "${hdr[@]}" >/dev/null
	wait_log_lines "$NGINX_LOG" $((n + 1)) || fail "nginx did not log $c"
	got=$(tail -1 "$NGINX_LOG" | cut -f1)
	log "$c: explain '$want', nginx '$got'"
	[ "$want" = "$got" ] || fail "explain and nginx disagree on $c"
done
log "wrk: 3 s, 4 connections, 11 requests in rotation"
wrk -t2 -c4 -d3s -s "$IT_DIR/wrk_mix.lua" "http://127.0.0.1:$PROXY_PORT/" |
	tee "$T/wrk.txt"
log "hey: header match (X-Canary: 1 -> wild rule 0), 1000 requests"
hey -n 1000 -c 8 -host canary.example.com -H "X-Canary: 1" \
	"http://127.0.0.1:$PROXY_PORT/feature?chunked=1" >"$T/hey1.txt"
grep -q '\[200\].*1000 responses' "$T/hey1.txt" || fail "hey: $(cat "$T/hey1.txt")"
log "hey: slow route (web rule 2, 20 ms at the backend), 200 requests"
hey -n 200 -c 10 -host www.shop.test \
	"http://127.0.0.1:$PROXY_PORT/cart/42?delay_ms=20" >"$T/hey2.txt"
grep -q '\[200\].*200 responses' "$T/hey2.txt" || fail "hey: $(cat "$T/hey2.txt")"
log "curl: scripted"
[ "$(px www.shop.test /)" = 200 ] || fail "www.shop.test / did not answer 200"
[ "$(px www.shop.test /static/x/s404)" = 404 ] || fail "/static/x/s404 not 404"
[ "$(px API.Example.COM:18080 /v1/status)" = 200 ] || fail "mixed-case host with port"
[ "$(px api.example.com /v2)" = 404 ] || fail "api.example.com /v2 should be unmatched"

# web only carries the slow requests (and 2 fast ones): its latency sum
# must agree within 5 %; the other routes within 5 % + rounding per request.
compare_log --strict-latency shop/web
