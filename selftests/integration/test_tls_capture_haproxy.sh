#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# TLS capture (gates TLSCapture and HTTP2) with haproxy
# terminating TLS: its own BIO does the socket I/O inside SSL_read/SSL_write,
# on the calling thread, so the socket is named the same way as nginx's.
# Every route, rule and status class of manifests/base over TLS (wrk with the
# mixed script, hey with a new connection per request, a slow endpoint), and
# HTTP/2 chosen by ALPN (h2load, 10 streams a connection), compared with
# haproxy's own log route by route.
PROXY_EXE=mm-it-haproxy # a copy: other haproxy instances stay out
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer
command -v openssl >/dev/null || fail "openssl is missing (deploy/install-deps.sh installs it)"
use_manifests base
start_backends
make_cert
cat "$T/tls.crt" "$T/tls.key" >"$T/tls.pem"
HAPROXY_TLS_PORT=28443
HAPROXY_ALPN=h2,http/1.1
port_free $HAPROXY_TLS_PORT
start_agent --feature-gates=TLSCapture=true,HTTP2=true
start_haproxy 1
wait_for 10 listening $HAPROXY_TLS_PORT || fail "haproxy did not listen with TLS"
# haproxy started after the agent: its libssl is attached at the next scan
wait_for 20 grep -q 'TLS capture: uprobes on .*libssl' "$T/agent.out" ||
	fail "no uprobes on haproxy's libssl: $(grep -i tls "$T/agent.out")"

A=127.0.0.1:$HAPROXY_TLS_PORT
wrk -t1 -c4 -d3s -s "$IT_DIR/wrk_mix.lua" "https://$A/" | tee "$T/wrk.txt"
hey -n 300 -c 4 -disable-keepalive -host api.example.com "https://$A/v1/status" >/dev/null
hey -n 100 -c 10 -host www.shop.test "https://$A/cart/42?delay_ms=20" >/dev/null
h2load -n 1000 -c 2 -m 10 -H ':authority: api.example.com' "https://$A/v1/status" \
	>"$T/h2load.out" 2>&1 || fail "h2load: $(tail -5 "$T/h2load.out")"
grep -q '1000 succeeded' "$T/h2load.out" || fail "h2load: $(grep -A1 requests: "$T/h2load.out")"
grep -q 'Application protocol: h2' "$T/h2load.out" || fail "h2load did not speak h2"
DOWN=envoy_http_downstream_rq_total
[ "$(metric $DOWN)" != 0 ] || fail "no TLS request was read downstream"
expect_metric 1000 "h2 streams of h2load" milometer_http2_streams_total result=exchange
$PY "$IT_DIR/mmcheck.py" compare --url "$METRICS_URL" --log "$HA_LOG" \
	--format haproxy ||
	fail "the agent's counts differ from haproxy's log (above)"
stop_agent
log "haproxy TLS capture ok"
