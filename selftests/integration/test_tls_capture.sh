#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# TLS capture (gate TLSCapture): nginx terminates TLS (its
# libssl.so.3, a certificate made here); with the gate on, the plaintext
# of SSL_read/SSL_write is parsed and the TLS requests count downstream per
# route exactly as the access log says, by curl (new connections, HTTP/1.1)
# and wrk (keep-alive, many requests per connection). The gate turned off
# by a config reload: the uprobes, programs, maps and pins of TLS capture
# are gone (bpftool prog/map/link show, the agent's bpffs), plaintext keeps
# being counted without a gap, TLS requests are no longer read downstream.
# Turned on again: attached again, counted again. Then a slow reader of
# large responses, and an nginx reload with a TLS request in flight.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
for t in openssl bpftool wrk; do
	command -v $t >/dev/null || fail "$t is missing (deploy/install-deps.sh installs it)"
done
use_manifests base
start_backends
NGINX_TLS_PORT=28443
port_free $NGINX_TLS_PORT
make_cert
start_nginx
wait_for 10 listening $NGINX_TLS_PORT || fail "nginx did not listen with TLS"
printf 'featureGates:\n  TLSCapture: true\n' >"$T/config.yaml"
start_agent --config "$T/config.yaml"
grep -q 'TLS capture: uprobes on .*libssl' "$T/agent.out" ||
	fail "no uprobes on nginx's libssl: $(grep -i tls "$T/agent.out")"

DOWN=envoy_http_downstream_rq_total
UP=envoy_cluster_upstream_rq_total
TLS_URL=https://www.shop.test:$NGINX_TLS_PORT
tls_get() {
	curl -sS -k -o /dev/null -w '%{http_code}\n' \
		--resolve "www.shop.test:$NGINX_TLS_PORT:127.0.0.1" "$@"
}
# the test agent's own, by its pins (another agent may run TLS capture too)
tls_progs() { agent_bpf_objs prog '^mm_(ssl|tls)_'; }
tls_maps() { agent_bpf_objs map '^mm_tls_'; }
agent_pins() { in_agent_ns ls "$PIN_DIR"; }

[ -n "$(tls_progs)" ] || fail "no TLS capture program loaded"
for m in mm_tls_calls mm_tls_ssl mm_tls_conns mm_tls_gocalls; do
	tls_maps | grep -q " $m\$" || fail "TLS capture map $m missing: $(tls_maps)"
done
agent_pins | grep -q '^mm_tls_conns$' || fail "mm_tls_conns not pinned: $(agent_pins)"
# ctl tls: the library, and each nginx process with its uprobes
ctl --json tls >"$T/tls.json" || fail "ctl tls failed"
$PY - "$T/tls.json" $(pgrep -x "$PROXY_EXE") <<'PY' || fail "ctl --json tls: $(cat "$T/tls.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["enabled"] and any(l["path"].endswith("libssl.so.3") and l["usable"] for l in d["libraries"]), d
up = {p["pid"]: p["uprobes"] for p in d["processes"]}
assert all(up.get(int(pid), 0) > 0 for pid in sys.argv[2:]), (up, sys.argv[2:])
PY

# one request per connection (curl), then several per connection
unparsed0=$(metric milometer_bpf_unparsed_total)
tls0=$(metric milometer_bpf_tls_streams_total)
N=30
for i in $(seq $N); do
	[ "$(tls_get "$TLS_URL/cart/c$i")" = 200 ] || fail "TLS request $i"
done
urls=()
for i in $(seq 20); do urls+=("$TLS_URL/cart/k$i"); done
[ "$(tls_get "${urls[@]}" | grep -c '^200$')" = 20 ] || fail "keep-alive TLS requests"
wait_log_lines "$NGINX_LOG" $((N + 20)) || fail "nginx logged $(log_lines "$NGINX_LOG")"
expect_metric $((N + 20)) "TLS requests read downstream (SSL_read/SSL_write)" $DOWN k8s_httproute_name=web
expect_metric $((N + 20)) "their upstream requests" $UP k8s_httproute_name=web
[ "$(metric $DOWN k8s_httproute_name=unmatched)" = 0 ] || fail "TLS requests unmatched"
[ "$(metric $DOWN k8s_httproute_name=unknown)" = 0 ] || fail "TLS requests unknown"
# the ciphertext on the sockets is TLS records, not a parse failure: one
# TLS stream per connection (31), nothing unparsed
wait_for 10 metric_grew milometer_bpf_tls_streams_total "$tls0" $((N + 1)) ||
	fail "TLS streams $tls0 -> $(metric milometer_bpf_tls_streams_total), want +$((N + 1))"
[ "$(metric milometer_bpf_unparsed_total)" = "$unparsed0" ] ||
	fail "unparsed $unparsed0 -> $(metric milometer_bpf_unparsed_total): TLS records counted as parse failures"

# wrk: keep-alive under load, responses of several sizes
wrk -t1 -c8 -d2s -H 'Host: www.shop.test' "https://127.0.0.1:$NGINX_TLS_PORT/cart/w" \
	>"$T/wrk.out" 2>&1 || fail "wrk: $(cat "$T/wrk.out")"
# wrk's last requests are logged once nginx has seen its connections go
wait_for 20 conns_gone $NGINX_TLS_PORT || fail "connections to nginx still open after wrk"
total=$(mmlogcount shop/web)
log "nginx served $total TLS requests to shop/web ($(grep -o '[0-9]* requests in' "$T/wrk.out"))"
[ "$total" -gt $((N + 20 + 100)) ] || fail "wrk made too few requests: $(cat "$T/wrk.out")"
expect_metric "$total" "TLS requests under wrk, downstream" $DOWN k8s_httproute_name=web
expect_metric "$total" "TLS requests under wrk, upstream" $UP k8s_httproute_name=web
ids=$(tls_progs | cut -d' ' -f1 | tr '\n' ' ')
map_ids=$(tls_maps | cut -d' ' -f1 | tr '\n' ' ')

# gate off by a reload: nothing of TLS capture left
sed -i 's/TLSCapture: true/TLSCapture: false/' "$T/config.yaml"
kill -HUP "$AGENT_PID"
wait_for 20 grep -q 'TLS capture off' "$T/agent.out" || fail "SIGHUP did not turn TLS capture off"
# the kernel frees a detached program after an RCU grace period: every
# program and map TLS capture had is gone from the kernel
left_ids() {
	local id
	for id in $ids; do bpftool prog show id "$id" >/dev/null 2>&1 && echo "prog $id"; done
	for id in $map_ids; do bpftool map show id "$id" >/dev/null 2>&1 && echo "map $id"; done
	true
}
no_tls_left() { [ -z "$(left_ids)" ]; }
[ -n "$ids" ] && [ -n "$map_ids" ] || fail "no TLS program or map ids to follow: $ids / $map_ids"
wait_for 10 no_tls_left || fail "TLS programs or maps still there: $(left_ids)"
for id in $ids; do
	bpftool link show | grep -Eq "prog $id\b" && fail "a link to TLS program $id is left"
done
agent_pins | grep -Eq '^mm_(tls|ssl)_' && fail "TLS pins left: $(agent_pins)"
agent_pins | grep -q '^mm_events$' || fail "the data path's pins went too: $(agent_pins)"
[ "$(ctl --json tls)" = '{"enabled":false}' ] || fail "ctl tls with the gate off: $(ctl --json tls)"
before_down=$(metric $DOWN k8s_httproute_name=web)
before_api=$(metric $DOWN k8s_httproute_name=api)
for i in $(seq 10); do
	[ "$(tls_get "$TLS_URL/cart/off$i")" = 200 ] || fail "TLS request $i (gate off)"
	[ "$(px api.example.com /v1/status)" = 200 ] || fail "plaintext request $i (gate off)"
done
expect_metric $((before_api + 10)) "plaintext while TLS capture is off" $DOWN k8s_httproute_name=api
expect_metric $((total + 10)) "upstream of TLS requests while off" $UP k8s_httproute_name=web
[ "$(metric $DOWN k8s_httproute_name=web)" = "$before_down" ] ||
	fail "TLS requests read downstream with the gate off"

# on again
sed -i 's/TLSCapture: false/TLSCapture: true/' "$T/config.yaml"
kill -HUP "$AGENT_PID"
on_again() { [ "$(grep -c 'TLS capture: uprobes on .*libssl' "$T/agent.out")" -ge 2 ]; }
wait_for 60 on_again || fail "SIGHUP did not attach TLS capture again"
for i in $(seq 10); do
	[ "$(tls_get "$TLS_URL/cart/on$i")" = 200 ] || fail "TLS request $i (on again)"
done
expect_metric $((before_down + 10)) "TLS requests after the gate came back" $DOWN k8s_httproute_name=web

# a slow reader: 1 MB responses read at 300 KB/s (nginx's SSL_write
# meets a full socket: partial writes, retried with the same buffer)
for i in 1 2; do
	got=$(curl -sS -k --limit-rate 300k -o /dev/null -w '%{http_code} %{size_download}' \
		--resolve "www.shop.test:$NGINX_TLS_PORT:127.0.0.1" "$TLS_URL/cart/big$i?size=1000000")
	[ "$got" = "200 1000000" ] || fail "slow reader $i: $got"
done
expect_metric $((before_down + 12)) "slowly read TLS responses" $DOWN k8s_httproute_name=web

# nginx reloaded with a TLS request in flight: the old worker ends it, the
# new workers (forked at the reload) are attached and count from the start
curl -sS -k -o /dev/null --trace-ascii "$T/slow.trace" \
	--resolve "www.shop.test:$NGINX_TLS_PORT:127.0.0.1" "$TLS_URL/cart/slow?delay_ms=2000" &
SLOW_PID=$!
wait_for 10 grep -q 'GET /cart/slow' "$T/slow.trace" || fail "the slow TLS request was not sent"
nginx_reload
wait "$SLOW_PID" || fail "the TLS request in flight across the reload failed"
for i in $(seq 10); do
	[ "$(tls_get "$TLS_URL/cart/new$i")" = 200 ] || fail "TLS request $i after the reload"
done
expect_metric $((before_down + 23)) "TLS requests across and after a reload" $DOWN k8s_httproute_name=web
# all but the 10 made with the gate off
[ "$(mmlogcount shop/web)" = $(($(metric $DOWN k8s_httproute_name=web) + 10)) ] ||
	fail "nginx logged $(mmlogcount shop/web) for shop/web, the agent $(metric $DOWN k8s_httproute_name=web) (+10 with the gate off)"
stop_agent
log "TLS capture ok"
