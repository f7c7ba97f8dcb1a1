#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Routes from the Kubernetes API (the test API server, driven by kubectl)
# instead of a manifests dir, updated under load as test_route_update.sh
# does with files: an HTTPRoute created, routes.yaml re-applied with
# shop/web's /cart rule as /basket, and apps/new deleted, each followed by
# an nginx reload with a config generated from the same manifests. Between
# them the API misbehaves: a watch answered with an in-stream 410, the
# server restarted, the token rotated. No request may be lost or counted
# twice: totals equal nginx's log; untouched routes exactly; the changed
# ones merged across the switch, exact again after it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/k8s_api.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
k8s_start_api --bookmark-interval 5
k8s_base_objects
AGENT_SOURCE=(--kubeconfig "$T/kubeconfig")
export MILOMETER_K8S_BACKOFF_RESET_S=5
start_agent
grep -q 'k8s: watching' "$T/agent.out" || fail "the agent did not use the API"

# apply FILE_IN_UPDATE NAME: into the API (kubectl) and nginx's manifests dir
apply() {
	kc apply -f "$MANIFESTS_SRC/update/$1" >/dev/null || fail "kubectl apply $1"
	cp "$MANIFESTS_SRC/update/$1" "$T/$2.tmp"
	mv "$T/$2.tmp" "$T/manifests/$2"
}

start_bg wrk wrk -t1 -c4 -d12s -s "$IT_DIR/wrk_update.lua" \
	"http://127.0.0.1:$PROXY_PORT/"
WRK=$LAST_PID
wait_log_lines "$NGINX_LOG" 2000 || fail "no load reached nginx"
log "adding apps/new under load ($(log_lines "$NGINX_LOG") requests so far)"
apply new-route.yaml new-route.yaml
nginx_reload
n=$(log_lines "$NGINX_LOG")
wait_log_lines "$NGINX_LOG" $((n + 2000)) || fail "load stopped"

log "watch answered 410 (history compacted)"
k8s_ctl /ctl/compact '{"kill_watches":true}'
log "API server restart"
k8s_stop_api
k8s_start_api --bookmark-interval 5
log "token rotated"
k8s_rotate_token
k8s_ctl /ctl/close_watches '{}'
saw_401() {
	metrics | grep -q '^milometer_k8s_token_rereads_total [1-9]'
}
wait_for 30 saw_401 || fail "the rotated token was not met with a 401"

log "rewriting routes.yaml under load ($(log_lines "$NGINX_LOG") requests so far)"
apply routes-v2.yaml routes.yaml
nginx_reload
log "nginx reloaded ($(log_lines "$NGINX_LOG") requests so far)"
wait "$WRK" || true
cat "$T/wrk.out"
grep -q $'^shop/web rule 2\t.*\t/basket/1\t' "$NGINX_LOG" ||
	fail "the rewrite did not route /basket before wrk ended"

rq=envoy_http_downstream_rq_total
switched() {
	local t0 w0
	t0=$(metric $rq)
	w0=$(metric $rq k8s_httproute_name=web)
	px new.test /probe >/dev/null
	px www.shop.test /basket/probe >/dev/null
	wait_for 5 metric_grew $rq "$t0" 2 || return 1
	[ "$(metric $rq k8s_httproute_name=new)" != 0 ] &&
		metric_grew $rq "$w0" 1 k8s_httproute_name=web
}
wait_for 60 switched || fail "the agent never switched to the new routes from the API"
merged=(--merge apps/new,shop/web,unmatched)
compare_log "${merged[@]}" --latency-info

# the API faults were seen and survived
metrics >"$T/m.txt"
grep -q 'milometer_k8s_relists_total{resource="httproutes.gateway.networking.k8s.io"} [1-9]' "$T/m.txt" ||
	fail "no relist after the 410: $(grep k8s_relists "$T/m.txt")"
grep -q 'milometer_k8s_watch_state{resource="httproutes.gateway.networking.k8s.io",state="watching"} 1' "$T/m.txt" ||
	fail "httproutes not watching at the end: $(grep k8s_watch_state "$T/m.txt" | grep ' 1$')"

ctl k8s >"$T/ctl-k8s.txt"
grep -qE 'httproutes +watching +[0-9]+ objects' "$T/ctl-k8s.txt" || fail "milometer ctl k8s: $(cat "$T/ctl-k8s.txt")"

# deletion: apps/new goes away in the API and in nginx's config
kc delete httproute -n apps new >/dev/null || fail "kubectl delete"
rm "$T/manifests/new-route.yaml"
nginx_reload
gone() {
	local u0
	u0=$(metric $rq k8s_httproute_name=new)
	px new.test /gone >/dev/null
	sleep 0.3 # the agent drains its ring buffer every 50 ms
	[ "$(metric $rq k8s_httproute_name=new)" = "$u0" ]
}
wait_for 30 gone || fail "requests still counted for the deleted route"

# an HTTPRoute the compiler refuses is skipped with its reason; the rest stay
kc apply -f - >/dev/null <<EOY || fail "kubectl apply bad route"
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: bad, namespace: apps}
spec:
  parentRefs: [{name: gw, namespace: infra}]
  hostnames: [bad.test]
  rules: [{matches: [{path: {type: RegularExpression, value: "(["}}]}]
EOY
wait_for 20 grep -q 'k8s: skipping HTTPRoute apps/bad' "$T/agent.out" ||
	fail "the invalid route was not reported: $(tail -5 "$T/agent.out")"

# after the switches: exact per route again
declare -A a0 l0
for r in web unmatched; do a0[$r]=$(metric $rq k8s_httproute_name=$r); done
for r in shop/web unmatched; do l0[$r]=$(mmlogcount $r); done
hey -n 300 -c 4 -host new.test "http://127.0.0.1:$PROXY_PORT/after" >/dev/null
hey -n 300 -c 4 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/basket/2" >/dev/null
[ "$(mmlogcount shop/web)" = $((l0[shop/web] + 300)) ] || fail "nginx logged $(($(mmlogcount shop/web) - l0[shop/web])) more shop/web, not 300"
[ "$(mmlogcount unmatched)" = $((l0[unmatched] + 300)) ] || fail "nginx logged $(($(mmlogcount unmatched) - l0[unmatched])) more unmatched, not 300"
for r in web unmatched; do
	wait_for 20 metric_grew $rq "${a0[$r]}" 300 k8s_httproute_name=$r ||
		fail "after the switch: agent $r went ${a0[$r]} -> $(metric $rq k8s_httproute_name=$r), expected +300"
	[ "$(metric $rq k8s_httproute_name=$r)" = $((a0[$r] + 300)) ] ||
		fail "after the switch: agent $r went ${a0[$r]} -> $(metric $rq k8s_httproute_name=$r), expected +300"
done
compare_log "${merged[@]}" --latency-info
stop_agent
