#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The same counts against haproxy (recv/send on sockets, no splicing),
# routing like manifests/base (haproxy.cfg.in). Ground truth is haproxy's
# own log: one tab-separated line per request with the backend it chose
# (named r__NS__NAME__RULE after the route rule), the server, the status
# and its Ta/Tr timers (ms).
PROXY_EXE=mm-it-haproxy # a copy: other haproxy instances stay out
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer
use_manifests base
start_backends
start_agent # before haproxy: its threads must be found when it starts
# One thread: with two, haproxy 2.6 lost log lines under load here (35372
# lines for the 35387 responses wrk counted, the agent had 35389) and the
# log is the ground truth; test_haproxy_threads.sh covers threads against
# the clients' own counts.
start_haproxy 1

A=127.0.0.1:$PROXY_PORT
wrk -t2 -c4 -d3s -s "$IT_DIR/wrk_mix.lua" "http://$A/" | tee "$T/wrk.txt"
hey -n 1000 -c 8 -host canary.example.com -H "X-Canary: 1" \
	"http://$A/feature?chunked=1" >/dev/null
hey -n 200 -c 10 -host www.shop.test "http://$A/cart/42?delay_ms=20" >/dev/null
hey -n 1000 -c 4 -disable-keepalive -host api.example.com "http://$A/v1/status" >/dev/null
out=$(client send "$A" --pipeline --count 20 --host api.example.com --path /v1/status)
case "$out" in "responses 20 "*) ;; *) fail "pipelined: $out" ;; esac
out=$(client send "$A" --host api.example.com --path /v1/orders --method POST \
	--body 'order=1' --expect100 --count 10)
case "$out" in "responses 10 interim 10 "*) ;; *) fail "100-continue: $out" ;; esac
out=$(client send "$A" --bytewise --count 2 --host www.shop.test --path /cart/b)
case "$out" in "responses 2 "*) ;; *) fail "bytewise: $out" ;; esac
out=$(client send "$A" --method HEAD --count 10 --host www.shop.test --path /)
case "$out" in "responses 10 "*) ;; *) fail "HEAD: $out" ;; esac
# haproxy's Ta starts when it has the request, as nginx's $request_time;
# web carries only slow requests (and 12 fast ones): within 5 %.
$PY "$IT_DIR/mmcheck.py" compare --url "$METRICS_URL" --log "$HA_LOG" \
	--format haproxy --strict-latency shop/web ||
	fail "the agent's counts differ from haproxy's log (above)"
