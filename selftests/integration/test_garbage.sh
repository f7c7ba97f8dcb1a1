#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Garbage: random bytes, a TLS ClientHello and binary on the plain HTTP
# port. nginx answers 400 without a route; the agent counts random and
# binary bytes as unparsed and the ClientHellos as TLS streams (not a parse
# failure: an HTTPS listener's sockets look the same), never attributes
# them, and keeps counting real requests exactly.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
start_agent
A=127.0.0.1:$PROXY_PORT
before=$(metric milometer_bpf_unparsed_total)
tls_before=$(metric milometer_bpf_tls_streams_total)
hey -n 200 -c 2 -host api.example.com "http://127.0.0.1:$PROXY_PORT/v1/status" >/dev/null
client garbage "$A" --kind random --count 5
client garbage "$A" --kind tls --count 5
client garbage "$A" --kind binary --count 5
hey -n 200 -c 2 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/cart/x" >/dev/null
wait_for 10 unparsed_grew "$before" 10 ||
	fail "milometer_bpf_unparsed_total went from $before to $(metric milometer_bpf_unparsed_total), expected +10"
wait_for 10 metric_grew milometer_bpf_tls_streams_total "$tls_before" 5 ||
	fail "milometer_bpf_tls_streams_total went from $tls_before to $(metric milometer_bpf_tls_streams_total), expected +5"
[ "$(metric milometer_bpf_unparsed_total)" = $((before + 10)) ] ||
	fail "unparsed $(metric milometer_bpf_unparsed_total), want $((before + 10)): the ClientHellos counted as parse failures"
log "unparsed: $before -> $(metric milometer_bpf_unparsed_total), TLS streams: $tls_before -> $(metric milometer_bpf_tls_streams_total)"
curl -fsS "$AGENT_URL/readyz" >/dev/null || fail "agent not ready after garbage"
compare_log --ignore-unrouted --expect-total 400
