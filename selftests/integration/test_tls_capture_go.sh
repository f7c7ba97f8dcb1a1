#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# TLS capture of a Go proxy (gates TLSCapture and HTTP2): Debian's
# caddy (stripped; crypto/tls found through .gopclntab) terminating TLS with
# HTTP/3 off, reverse-proxying to the backend. Uprobes at (*Conn).Read and
# Write's first jump and on each of their RETs (never uretprobes on Go);
# calls are kept per goroutine (r14), and the socket syscall of the same
# goroutine names the socket, whatever thread runs it. HTTP/1.1 and h2
# clients; counts equal caddy's own access log. Plaintext state goes with
# its socket: a Write that returns after its socket's destroy (Go's h2
# server, under many short connections) leaves no entry behind.
PROXY_EXE=mm-it-caddy
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer
command -v caddy >/dev/null || fail "caddy is missing (deploy/install-deps.sh installs it)"
command -v bpftool >/dev/null || fail "bpftool is missing (deploy/install-deps.sh installs it)"
use_manifests base
start_backends
TLS_PORT=28443
port_free $TLS_PORT
C=$T/caddy
mkdir -p "$C"
cat >"$C/Caddyfile" <<CADDY
{
	admin off
	skip_install_trust
	servers {
		protocols h1 h2
	}
}
https://www.shop.test:$TLS_PORT {
	tls internal
	reverse_proxy 127.0.0.1:$PY_PORT
	log {
		output file $C/access.log
		format json
	}
}
CADDY
cp /usr/bin/caddy "$T/mm-it-caddy"
start_agent --feature-gates=TLSCapture=true,HTTP2=true
XDG_DATA_HOME=$C XDG_CONFIG_HOME=$C HOME=$C \
	start_bg caddy "$T/mm-it-caddy" run --config "$C/Caddyfile" --adapter caddyfile
wait_for 20 listening $TLS_PORT || fail "caddy did not start: $(tail -5 "$T/caddy.out")"
wait_for 10 grep -q 'TLS capture: uprobes on Go crypto/tls' "$T/agent.out" ||
	fail "no uprobes on caddy's crypto/tls: $(grep -i tls "$T/agent.out")"

R="--resolve www.shop.test:$TLS_PORT:127.0.0.1"
U=https://www.shop.test:$TLS_PORT/cart
for v in --http1.1 --http2; do
	for i in $(seq 10); do
		# shellcheck disable=SC2086
		got=$(curl -sS -k $v $R -o /dev/null -w '%{http_version} %{http_code}' "$U/c$i")
		case "$v $got" in "--http1.1 1.1 200" | "--http2 2 200") ;; *) fail "$v request $i: $got" ;; esac
	done
	urls=()
	for i in $(seq 10); do urls+=("$U/k$i"); done
	# shellcheck disable=SC2086
	[ "$(curl -sS -k $v $R -o /dev/null -w '%{http_code}\n' "${urls[@]}" | grep -c 200)" = 10 ] ||
		fail "$v keep-alive requests"
done
h2load -n 500 -c 4 -m 8 --connect-to=127.0.0.1:$TLS_PORT "https://www.shop.test:$TLS_PORT/cart/load" \
	>"$T/h2load.out" 2>&1 || fail "h2load: $(tail -3 "$T/h2load.out")"
grep -q '500 succeeded' "$T/h2load.out" || fail "h2load: $(grep -A1 requests: "$T/h2load.out")"
# many short h2 connections: each ends while its last Write may be returning
h2load -n 800 -c 200 -m 1 --connect-to=127.0.0.1:$TLS_PORT "https://www.shop.test:$TLS_PORT/cart/short" \
	>"$T/h2load2.out" 2>&1 || fail "h2load: $(tail -3 "$T/h2load2.out")"
grep -q '800 succeeded' "$T/h2load2.out" || fail "h2load: $(grep -A1 requests: "$T/h2load2.out")"
wait_for 10 log_at_least "$C/access.log" 1340 || fail "caddy logged $(log_lines "$C/access.log")"
n=$(grep -c '"status":200' "$C/access.log")
log "caddy logged $n requests"
DOWN=envoy_http_downstream_rq_total
UP=envoy_cluster_upstream_rq_total
# What a count off by a few needs to be told apart: every non-zero series
# of both legs with its labels (method, status, aborted, route), the data
# path's counters, and the access log's statuses and protocols.
diagnose() {
	log "caddy's log by protocol, status and path: $($PY -c 'import collections, json, re, sys
n = collections.Counter()
for l in open(sys.argv[1]):
    j = json.loads(l)
    r = j.get("request", {})
    n[(r.get("proto"), j.get("status"), re.sub(r"[0-9]+$", "", r.get("uri", "")))] += 1
print("; ".join("%s %s %s: %d" % (k + (v,)) for k, v in sorted(n.items(), key=str)))' "$C/access.log")"
	metrics | grep -E "^($DOWN|$UP)\{" | grep -v ' 0$' >&2
	metrics | grep -E '^milometer_(bpf|http2)_[a-z_]*(\{[^}]*\})? ' | grep -v ' 0$' >&2
}
for leg in downstream:$DOWN upstream:$UP; do
	wait_for 20 metric_is "$n" "${leg#*:}" k8s_httproute_name=web || {
		diagnose
		fail "${leg%%:*} requests caddy logged: agent says $(metric "${leg#*:}" k8s_httproute_name=web), want $n (diagnosis above)"
	}
done
expect_metric 1320 "HTTP/2 streams" milometer_http2_streams_total result=exchange
tls_conns_gone() { [ "$(map_entries mm_tls_conns)" = 0 ]; }
wait_for 20 tls_conns_gone ||
	fail "mm_tls_conns keeps $(map_entries mm_tls_conns) entries after every client closed: $(agent_bpftool map dump pinned "$PIN_DIR/mm_tls_conns" | grep -m3 key)"
log "plaintext entries all freed; TLS I/Os after their socket's close: $(metric milometer_bpf_tls_no_connection_total)"
stop_agent
log "Go TLS capture ok"
