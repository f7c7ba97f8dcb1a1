#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Route table update under load: while wrk runs, a new HTTPRoute lands in
# the agent's manifests dir (atomic rename) and nginx reloads a config
# generated from the new manifests. No request may be lost or counted
# twice: totals equal the log; routes the update does not touch equal it
# exactly; new.test requests are apps/new or unmatched depending on which
# side of the switch they fell (compared merged). After the switch the
# agent must attribute new.test to apps/new exactly.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
start_agent
start_bg wrk wrk -t1 -c4 -d6s -s "$IT_DIR/wrk_update.lua" \
	"http://127.0.0.1:$PROXY_PORT/"
WRK=$LAST_PID
wait_log_lines "$NGINX_LOG" 2000 || fail "no load reached nginx"
log "adding apps/new under load ($(log_lines "$NGINX_LOG") requests so far)"
cp "$MANIFESTS_SRC/update/new-route.yaml" "$T/new-route.yaml.tmp"
mv "$T/new-route.yaml.tmp" "$T/manifests/new-route.yaml"
nginx_reload
log "nginx reloaded ($(log_lines "$NGINX_LOG") requests so far)"
wait "$WRK" || true
cat "$T/wrk.out"
new_after=$(mmlogcount apps/new)
log "nginx routed $new_after requests to apps/new under load"
[ "$new_after" -gt 0 ] || fail "the reload did not route new.test before wrk ended"

agent_new() { metric envoy_http_downstream_rq_total k8s_httproute_name=new; }
# The agent picks the file up on its own schedule: poll with requests
# until one is attributed to apps/new.
new_live() {
	px new.test /probe >/dev/null
	[ "$(agent_new)" != 0 ]
}
wait_for 20 new_live || fail "the agent never attributed new.test to apps/new"
compare_log --merge apps/new,unmatched --latency-info
a0=$(agent_new)
l0=$(mmlogcount apps/new)
hey -n 500 -c 4 -host new.test "http://127.0.0.1:$PROXY_PORT/after" >/dev/null
test_agent_new_is() { [ "$(agent_new)" = "$1" ]; }
wait_for 20 test_agent_new_is $((a0 + 500)) ||
	fail "after the switch: agent apps/new went $a0 -> $(agent_new), expected +500"
[ "$(mmlogcount apps/new)" = $((l0 + 500)) ] || fail "nginx did not log 500 more apps/new"
compare_log --merge apps/new,unmatched --latency-info
