#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# HTTP/2 connections open before the agent starts: h2load keeps
# h2c and h2-over-TLS connections busy while the agent attaches. Their
# streams after the attach are counted; a stream whose :authority (or
# path, method) is an HPACK reference to a table entry made before the
# attach is `unknown` — never another route's: nghttp2 indexes :authority,
# so most are unknown here. Ground truth from nginx's log: no route gets
# more than nginx served it, no route that was not requested gets any, and
# nothing counted started before the agent did.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
for t in openssl h2load; do
	command -v $t >/dev/null || fail "$t is missing (deploy/install-deps.sh installs it)"
done
use_manifests base
start_backends
NGINX_TLS_PORT=28443
NGINX_TLS_H2=1
NGINX_H2C_PORT=28444
port_free $NGINX_TLS_PORT $NGINX_H2C_PORT
make_cert
start_nginx
wait_for 10 listening $NGINX_H2C_PORT || fail "nginx did not listen for h2c"
wait_for 10 listening $NGINX_TLS_PORT || fail "nginx did not listen with TLS"

# The load runs until the agent has seen it, then is stopped: the agent
# loads its programs on the two busy CPUs, which took from ~10 s to ~28 s
# on different machines, so a fixed duration either outlasts the test or
# ends before the attach. 120 s is a ceiling, not the plan.
start_bg h2c h2load -c 2 -m 4 -D 120 -H ':authority: www.shop.test' \
	"http://127.0.0.1:$NGINX_H2C_PORT/cart/late"
H2C_PID=$LAST_PID
start_bg h2tls h2load -c 2 -m 4 -D 120 -H ':authority: api.example.com' \
	"https://127.0.0.1:$NGINX_TLS_PORT/v1/status"
H2TLS_PID=$LAST_PID
wait_for 10 log_at_least "$NGINX_LOG" 100 || fail "h2load did not start: $(cat "$T/h2c.out")"
before=$(log_lines "$NGINX_LOG")
start_agent --feature-gates=TLSCapture=true,HTTP2=true
alive "$H2C_PID" && alive "$H2TLS_PID" ||
	fail "h2load ended before the agent was ready: $(tail -3 "$T/h2c.out" "$T/h2tls.out")"
# self-metrics are refreshed on a timer: poll
wait_for 20 metric_grew milometer_bpf_h2_connections_total 0 4 ||
	fail "the 4 open h2 connections were not recognised: $(metric milometer_bpf_h2_connections_total)"
# and streams on them counted after the attach, then the load stops
wait_for 20 metric_grew milometer_http2_streams_total 0 200 ||
	fail "no streams counted on the open connections: $(metric milometer_http2_streams_total)"
stop_pid "$H2C_PID"
stop_pid "$H2TLS_PID"
grep -q 'Application protocol: h2c' "$T/h2c.out" || fail "h2load did not speak h2c"
grep -q 'Application protocol: h2$' "$T/h2tls.out" || fail "h2load did not speak h2 over TLS"
all=$(log_lines "$NGINX_LOG")
web=$(mmlogcount shop/web)
api=$(mmlogcount apps/api)
log "nginx served $web (shop/web) + $api (apps/api); $((all - before)) after the agent started"

DOWN=envoy_http_downstream_rq_total
settled() { [ "$(metric milometer_http2_streams_total)" = "$1" ]; }
n=$(metric milometer_http2_streams_total)
while wait_for 3 settled "$n" && [ "$n" != "$(metric milometer_http2_streams_total)" ]; do
	n=$(metric milometer_http2_streams_total)
done
a_web=$(metric $DOWN k8s_httproute_name=web)
a_api=$(metric $DOWN k8s_httproute_name=api)
a_unk=$(metric $DOWN k8s_httproute_name=unknown)
a_all=$(metric $DOWN)
log "agent: shop/web $a_web, apps/api $a_api, unknown $a_unk, all $a_all"
[ $((a_web + a_api + a_unk)) -gt 0 ] || fail "no stream after the attach was counted"
[ "$a_all" = $((a_web + a_api + a_unk)) ] || fail "streams counted on other routes: $a_all in all"
[ "$a_web" -le "$web" ] && [ "$a_api" -le "$api" ] ||
	fail "more than nginx served: web $a_web > $web or api $a_api > $api"
[ "$a_all" -le $((all - before)) ] ||
	fail "$a_all counted, but only $((all - before)) requests were logged after the agent started"
stop_agent
log "h2 late join ok"
