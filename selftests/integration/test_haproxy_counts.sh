#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The same counts against haproxy (recv/send on sockets, its own threads,
# no splicing), routing like manifests/base. Ground truth is haproxy's own
# log: one tab-separated line per request with the backend it chose (named
# r__NS__NAME__RULE after the route rule), the server, the status and its
# Ta/Tr timers (ms).
PROXY_EXE=mm-it-haproxy # a copy: other haproxy instances stay out
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer
use_manifests base
HA_LOG=$T/haproxy/access.log
mkdir -p "$T/haproxy"
port_free $PROXY_PORT

# haproxy.cfg equivalent to manifests/base/routes.yaml (by hand: the
# routes are simple, and Gateway API precedence is spelled out in order).
cat >"$T/haproxy/haproxy.cfg" <<CFG
global
    log stdout format raw local0
    maxconn 4096
    nbthread 2
defaults
    mode http
    log global
    option http-keep-alive
    option dontlognull
    no option splice-auto
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout http-keep-alive 30s
    log-format "%b\t%s\t%ST\t%Ta\t%Tr\t%HM\t%[capture.req.hdr(0)]\t%HPO\t%tsc"
frontend gw
    bind 127.0.0.1:$PROXY_PORT
    capture request header Host len 64
    http-request set-var(txn.host) req.hdr(host),field(1,:),lower
    acl h_api var(txn.host) -m str api.example.com
    acl h_wild var(txn.host) -m end .example.com
    acl h_web var(txn.host) -m str www.shop.test
    acl p_v1status path /v1/status
    acl p_v1 path /v1
    acl p_v1 path_beg /v1/
    acl p_static path /static
    acl p_static path_beg /static/
    acl p_root path /
    acl p_cart path /cart
    acl p_cart path_beg /cart/
    acl m_post method POST
    acl canary req.hdr(x-canary) -m str 1
    use_backend r__apps__api__0 if h_api p_v1status
    use_backend r__apps__api__1 if h_api p_v1 m_post
    use_backend r__apps__api__2 if h_api p_v1
    use_backend r__apps__wild__0 if !h_api h_wild canary
    use_backend r__apps__wild__1 if !h_api h_wild
    use_backend r__shop__web__0 if h_web p_static
    use_backend r__shop__web__1 if h_web p_root
    use_backend r__shop__web__2 if h_web p_cart
    default_backend unmatched
backend unmatched
    http-request return status 404
backend r__apps__api__0
    server static 127.0.0.1:$STATIC_PORT
backend r__apps__api__1
    server py 127.0.0.1:$PY_PORT
backend r__apps__api__2
    server py 127.0.0.1:$PY_PORT
backend r__apps__wild__0
    server py 127.0.0.1:$PY_PORT
backend r__apps__wild__1
    server static 127.0.0.1:$STATIC_PORT
backend r__shop__web__0
    server static 127.0.0.1:$STATIC_PORT
backend r__shop__web__1
    server static 127.0.0.1:$STATIC_PORT
backend r__shop__web__2
    server py 127.0.0.1:$PY_PORT
CFG
haproxy -c -q -f "$T/haproxy/haproxy.cfg" || fail "haproxy.cfg does not load"
start_backends
start_agent # before haproxy: its threads must be found when it starts
cp /usr/sbin/haproxy "$T/mm-it-haproxy"
start_bg haproxy sh -c "exec $T/mm-it-haproxy -db -f '$T/haproxy/haproxy.cfg' >'$HA_LOG'"
wait_for 10 listening $PROXY_PORT || fail "haproxy did not start: $(cat "$T/haproxy.out")"

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
