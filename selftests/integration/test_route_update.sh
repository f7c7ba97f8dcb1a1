#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Route table updates under load: while wrk runs, (1) a new HTTPRoute lands
# in the agent's manifests dir and (2) routes.yaml is rewritten (shop/web's
# /cart rule becomes /basket), each an atomic rename, each followed by an
# nginx reload with a config generated from the new manifests. No request
# may be lost or counted twice: totals equal the log; the routes the
# updates do not touch (api, wild) equal it exactly; requests of the routes
# that changed (apps/new, shop/web, unmatched) are compared merged while
# the switch happens, since either side of it is right. After the switch
# those routes must equal the log exactly again. Then the directory goes
# away and comes back: the table stays, the rejection is shown and clears.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
start_agent

# replace FILE_IN_UPDATE NAME: atomic rename into the manifests dir
replace() {
	cp "$MANIFESTS_SRC/update/$1" "$T/$2.tmp"
	mv "$T/$2.tmp" "$T/manifests/$2"
}

start_bg wrk wrk -t1 -c4 -d6s -s "$IT_DIR/wrk_update.lua" \
	"http://127.0.0.1:$PROXY_PORT/"
WRK=$LAST_PID
wait_log_lines "$NGINX_LOG" 2000 || fail "no load reached nginx"
log "adding apps/new under load ($(log_lines "$NGINX_LOG") requests so far)"
replace new-route.yaml new-route.yaml
nginx_reload
n=$(log_lines "$NGINX_LOG")
wait_log_lines "$NGINX_LOG" $((n + 2000)) || fail "load stopped"
log "rewriting routes.yaml under load ($(log_lines "$NGINX_LOG") requests so far)"
replace routes-v2.yaml routes.yaml
nginx_reload
log "nginx reloaded ($(log_lines "$NGINX_LOG") requests so far)"
wait "$WRK" || true
cat "$T/wrk.out"
[ "$(mmlogcount apps/new)" -gt 0 ] ||
	fail "the reload did not route new.test before wrk ended"
grep -q $'^shop/web rule 2\t.*\t/basket/1\t' "$NGINX_LOG" ||
	fail "the rewrite did not route /basket before wrk ended"

rq=envoy_http_downstream_rq_total
# The agent picks the files up on its own schedule: probe until it
# attributes new.test to apps/new and /basket to shop/web.
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
wait_for 20 switched || fail "the agent never switched to the new routes"
merged=(--merge apps/new,shop/web,unmatched)
compare_log "${merged[@]}" --latency-info

# after the switch: exact per route again
declare -A a0 l0
for r in new web unmatched; do a0[$r]=$(metric $rq k8s_httproute_name=$r); done
for r in apps/new shop/web unmatched; do l0[$r]=$(mmlogcount $r); done
hey -n 300 -c 4 -host new.test "http://127.0.0.1:$PROXY_PORT/after" >/dev/null
hey -n 300 -c 4 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/basket/2" >/dev/null
hey -n 300 -c 4 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/cart/2" >/dev/null
for r in apps/new shop/web unmatched; do
	[ "$(mmlogcount $r)" = $((l0[$r] + 300)) ] ||
		fail "nginx logged $(($(mmlogcount $r) - l0[$r])) more $r, not 300"
done
for r in new web unmatched; do
	wait_for 20 metric_grew $rq "${a0[$r]}" 300 k8s_httproute_name=$r ||
		fail "after the switch: agent $r went ${a0[$r]} -> $(metric $rq k8s_httproute_name=$r), expected +300"
	[ "$(metric $rq k8s_httproute_name=$r)" = $((a0[$r] + 300)) ] ||
		fail "after the switch: agent $r went ${a0[$r]} -> $(metric $rq k8s_httproute_name=$r), expected +300"
done
compare_log "${merged[@]}" --latency-info

# The manifests directory goes away (a ConfigMap volume being replaced):
# the route table stays and counts, the rejection is said once and shown;
# when it comes back as it was, the rejection clears.
mv "$T/manifests" "$T/manifests.away"
wait_for 20 metric_is 1 milometer_routes_rejected ||
	fail "the missing manifests directory was not reported (milometer_routes_rejected $(metric milometer_routes_rejected))"
grep -q "manifests rejected, keeping the previous route table: .*manifests" "$T/agent.out" ||
	fail "the agent log does not say the route table was kept: $(tail -3 "$T/agent.out")"
w0=$(metric $rq k8s_httproute_name=web)
l0=$(mmlogcount shop/web)
hey -n 200 -c 4 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/basket/3" >/dev/null
[ "$(mmlogcount shop/web)" = $((l0 + 200)) ] || fail "nginx did not log 200 more shop/web"
wait_for 20 metric_grew $rq "$w0" 200 k8s_httproute_name=web ||
	fail "with the directory gone the kept table stopped counting shop/web: $w0 -> $(metric $rq k8s_httproute_name=web)"
mv "$T/manifests.away" "$T/manifests"
wait_for 20 metric_is 0 milometer_routes_rejected ||
	fail "the rejection did not clear when the directory came back"
[ "$(grep -c "manifests rejected, keeping the previous route table" "$T/agent.out")" = 1 ] ||
	fail "the missing directory was logged more than once: $(grep -c "manifests rejected" "$T/agent.out") times"
compare_log "${merged[@]}"
