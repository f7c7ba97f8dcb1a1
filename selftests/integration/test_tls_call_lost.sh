#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A TLS call the agent cannot follow is counted and costs only its own
# request: Go crypto/tls calls in flight are kept per goroutine in an LRU
# map (mm_tls_gocalls), here shrunk to 8 entries (MILOMETER_TEST_MAX_GO_CALLS)
# under Debian's caddy. 40 keep-alive HTTPS connections, opened one after
# another with a request each, leave 40 goroutines in Read: more than the
# map holds, so most of their entries are evicted. A second request on each
# connection, one at a time, returns from Reads whose entry is gone: each is
# counted in milometer_bpf_tls_call_lost_total, its request is not counted,
# and its response (no request to pair with) is dropped. So the downstream
# 200s plus the lost calls equal caddy's access log, nothing is attributed
# to another route or left aborted, and the plaintext upstream legs are all
# counted. A Write lost after its Read was followed leaves its request
# aborted, never with another status. Before lost Go calls were counted,
# the counter stayed at 0.
PROXY_EXE=mm-it-caddy
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer
command -v caddy >/dev/null || fail "caddy is missing (deploy/install-deps.sh installs it)"
use_manifests base
start_backends
TLS_PORT=28443
CONNS=40
port_free $TLS_PORT
C=$T/caddy
mkdir -p "$C"
cat >"$C/Caddyfile" <<CADDY
{
	admin off
	skip_install_trust
	servers {
		protocols h1
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
export MILOMETER_TEST_MAX_GO_CALLS=8
start_agent --feature-gates=TLSCapture=true
XDG_DATA_HOME=$C XDG_CONFIG_HOME=$C HOME=$C \
	start_bg caddy "$T/mm-it-caddy" run --config "$C/Caddyfile" --adapter caddyfile
wait_for 20 listening $TLS_PORT || fail "caddy did not start: $(tail -5 "$T/caddy.out")"
wait_for 10 grep -q 'TLS capture: uprobes on Go crypto/tls' "$T/agent.out" ||
	fail "no uprobes on caddy's crypto/tls: $(grep -i tls "$T/agent.out")"
size=$(agent_bpftool map show pinned "$PIN_DIR/mm_tls_gocalls" 2>&1 | sed -n 's/.*max_entries \([0-9]*\).*/\1/p')
[ "$size" = 8 ] || fail "mm_tls_gocalls has max_entries '$size', want the test's 8"

$PY "$IT_DIR/tls_keepalive.py" 127.0.0.1 $TLS_PORT www.shop.test /cart $CONNS 2 >"$T/client.out" 2>&1 ||
	fail "client: $(tail -3 "$T/client.out")"
n=$((CONNS * 2))
wait_for 10 log_at_least "$C/access.log" $n || fail "caddy logged $(log_lines "$C/access.log")"
logged=$(grep -c '"status":200' "$C/access.log")
[ "$logged" = $n ] || fail "caddy logged $logged requests with status 200, want $n"
DOWN=envoy_http_downstream_rq_total
UP=envoy_cluster_upstream_rq_total
expect_metric "$n" "upstream requests caddy logged (plaintext legs)" $UP k8s_httproute_name=web
# Go's transport reads on another thread than it writes: a response read
# before its request's send tracepoint ran is held and paired (docs/design.md)
log "upstream responses read before their request's write was seen: $(metric milometer_bpf_response_first_total), while its head was parsed: $(metric milometer_bpf_response_in_parse_total)"
# the last response is dropped only after its Read was counted: read both
# once the upstream count is complete, then wait for them to agree
lost_ok() {
	local lost ok
	lost=$(metric milometer_bpf_tls_call_lost_total)
	ok=$(metric $DOWN k8s_httproute_name=web http_response_status_code=200)
	[ "$lost" -gt 0 ] && [ $((lost + ok)) = "$n" ]
}
wait_for 20 lost_ok ||
	fail "lost calls $(metric milometer_bpf_tls_call_lost_total) + downstream 200s $(metric $DOWN k8s_httproute_name=web http_response_status_code=200) != $n logged (want lost > 0)"
lost=$(metric milometer_bpf_tls_call_lost_total)
ok=$(metric $DOWN k8s_httproute_name=web http_response_status_code=200)
web=$(metric $DOWN k8s_httproute_name=web)
all=$(metric $DOWN)
aborted=$(metric $DOWN k8s_httproute_name=web milometer_aborted=true)
[ "$all" = "$web" ] ||
	fail "downstream: $all requests counted in all, $web on route web: a lost call's bytes were attributed elsewhere: $(metrics | grep "^$DOWN" | grep -v ' 0$')"
# a Write lost after its Read was followed leaves its request aborted
web_split() {
	[ "$(metric $DOWN k8s_httproute_name=web)" = $(($(metric $DOWN k8s_httproute_name=web http_response_status_code=200) + $(metric $DOWN k8s_httproute_name=web milometer_aborted=true))) ]
}
wait_for 10 web_split ||
	fail "route web: $web requests, $ok with status 200 and $aborted aborted: $(metrics | grep "^$DOWN" | grep -v ' 0$')"
log "$n requests logged: $ok counted downstream, $lost TLS calls counted lost (mm_tls_gocalls: 8 entries for $CONNS goroutines in Read)"
stop_agent
log "lost TLS calls counted, nothing misattributed"
