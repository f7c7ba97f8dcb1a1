#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# HTTP/2 at the gateway (gate HTTP2, with TLSCapture for h2 inside
# TLS): nginx serves h2 over TLS (ALPN) and prior-knowledge h2c; BPF
# recognises the client's connection preface and sends the connection's
# bytes to the user-space decoder (HPACK, streams), whose streams are
# attributed like HTTP/1 requests. Clients: curl --http2 (one request per
# connection and several on one), curl --http2-prior-knowledge, h2load with
# many concurrent streams per connection, a header-matched route over h2.
# Ground truth: nginx's access log, route by route (downstream and upstream).
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
for t in openssl h2load curl; do
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
wait_for 10 listening $NGINX_TLS_PORT || fail "nginx did not listen with TLS"
wait_for 10 listening $NGINX_H2C_PORT || fail "nginx did not listen for h2c"
printf 'featureGates:\n  TLSCapture: true\n  HTTP2: true\n' >"$T/config.yaml"
start_agent --config "$T/config.yaml"

R="--resolve www.shop.test:$NGINX_TLS_PORT:127.0.0.1 --resolve api.example.com:$NGINX_TLS_PORT:127.0.0.1"
h2get() { # URL...: curl over TLS + h2, status codes one per line
	# shellcheck disable=SC2086
	curl -sS -k --http2 $R -o /dev/null -w '%{http_version} %{http_code}\n' "$@"
}
# one stream per connection, then 10 streams on one connection
for i in $(seq 10); do
	[ "$(h2get "https://www.shop.test:$NGINX_TLS_PORT/cart/c$i")" = "2 200" ] ||
		fail "h2 request $i: $(h2get "https://www.shop.test:$NGINX_TLS_PORT/cart/c$i")"
done
urls=()
for i in $(seq 10); do urls+=("https://api.example.com:$NGINX_TLS_PORT/v1/status"); done
[ "$(h2get "${urls[@]}" | grep -c '^2 200$')" = 10 ] || fail "10 h2 streams on one connection"
# h2c with prior knowledge: 404s of the py backend and a POST
for i in $(seq 5); do
	code=$(curl -sS --http2-prior-knowledge -o /dev/null -w '%{http_version} %{http_code}' \
		-H 'Host: api.example.com' "http://127.0.0.1:$NGINX_H2C_PORT/v1/users?status=404")
	[ "$code" = "2 404" ] || fail "h2c request $i: $code"
	code=$(curl -sS --http2-prior-knowledge -o /dev/null -w '%{http_version} %{http_code}' \
		-H 'Host: api.example.com' --data 'n=1' "http://127.0.0.1:$NGINX_H2C_PORT/v1/orders")
	[ "$code" = "2 200" ] || fail "h2c POST $i: $code"
done
# a route that matches on a header: only what the h2 request carries decides
for i in $(seq 5); do
	code=$(curl -sS --http2-prior-knowledge -o /dev/null -w '%{http_code}' \
		-H 'Host: canary.example.com' -H 'X-Canary: 1' "http://127.0.0.1:$NGINX_H2C_PORT/feature")
	[ "$code" = 200 ] || fail "h2c canary request $i: $code"
done
# h2load: 4 connections, 20 concurrent streams each, over TLS
h2load -n 2000 -c 4 -m 20 -H ':authority: www.shop.test' \
	"https://127.0.0.1:$NGINX_TLS_PORT/cart/load" >"$T/h2load.out" 2>&1 ||
	fail "h2load: $(tail -5 "$T/h2load.out")"
grep -q '2000 succeeded' "$T/h2load.out" || fail "h2load: $(grep requests: "$T/h2load.out")"
# large bodies over h2 (flow control: WINDOW_UPDATEs both ways, DATA
# frames across TLS records and reads)
for i in 1 2 3; do
	got=$(curl -sS -k --http2 $R -o /dev/null -w '%{http_version} %{http_code} %{size_download}' \
		"https://www.shop.test:$NGINX_TLS_PORT/cart/big$i?size=2000000")
	[ "$got" = "2 200 2000000" ] || fail "large h2 download $i: $got"
done
got=$(head -c 900000 /dev/zero | curl -sS -k --http2 $R -o /dev/null -w '%{http_version} %{http_code}' \
	--data-binary @- "https://www.shop.test:$NGINX_TLS_PORT/cart/upload")
[ "$got" = "2 200" ] || fail "large h2 upload: $got"
total=$((10 + 10 + 10 + 5 + 2000 + 4))
wait_log_lines "$NGINX_LOG" $total || fail "nginx logged $(log_lines "$NGINX_LOG"), want $total"
$PY "$IT_DIR/mmcheck.py" compare --url "$METRICS_URL" --log "$NGINX_LOG" --no-latency ||
	fail "the agent's counts differ from nginx's log (above)"
# self-metrics are refreshed on a timer: poll
wait_for 10 metric_grew milometer_bpf_h2_connections_total 0 30 ||
	fail "h2 connections seen: $(metric milometer_bpf_h2_connections_total)"
expect_metric $total "h2 streams that became exchanges" milometer_http2_streams_total result=exchange
[ "$(metric milometer_http2_streams_total result=lost)" = 0 ] || fail "h2 streams lost"

# HTTP2 off by a reload: h2 connections are no longer followed (the data
# path's flag is off: HTTP2 has no programs of its own), HTTP/1 still is
DOWN=envoy_http_downstream_rq_total
sed -i 's/HTTP2: true/HTTP2: false/' "$T/config.yaml"
kill -HUP "$AGENT_PID"
h2_off() { ctl features | grep -Eq '^HTTP2 +ALPHA +false +false '; }
wait_for 20 h2_off || fail "SIGHUP did not turn HTTP2 off: $(ctl features)"
cfg_flags() {
	agent_bpftool -j map dump pinned "$PIN_DIR/mm_config" |
		$PY -c 'import json,sys; print(json.load(sys.stdin)[0]["formatted"]["value"]["flags"])'
}
# bit 0x1 is MM_CFG_HTTP2 (bpf/milometer.h); 0x4 (the table defers) stays
[ $(($(cfg_flags) & 1)) = 0 ] || fail "mm_config.flags still $(cfg_flags) (MM_CFG_HTTP2 set) with HTTP2 off"
[ $(($(cfg_flags) & 4)) = 4 ] || fail "mm_config.flags $(cfg_flags): MM_CFG_DEFERS off, but this table has header matches"
before_api=$(metric $DOWN k8s_httproute_name=api)
before_h2=$(metric milometer_http2_streams_total result=exchange)
for i in $(seq 5); do
	code=$(curl -sS --http2-prior-knowledge -o /dev/null -w '%{http_code}' \
		-H 'Host: api.example.com' "http://127.0.0.1:$NGINX_H2C_PORT/v1/status")
	[ "$code" = 200 ] || fail "h2c request $i with HTTP2 off: $code"
	[ "$(px api.example.com /v1/status)" = 200 ] || fail "HTTP/1 request $i with HTTP2 off"
done
expect_metric $((before_api + 5)) "HTTP/1 requests with HTTP2 off (h2c not read)" $DOWN k8s_httproute_name=api
[ "$(metric milometer_http2_streams_total result=exchange)" = "$before_h2" ] ||
	fail "h2 streams counted with HTTP2 off"
stop_agent
log "h2 capture ok"
