#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# milometer's reflector (agent/k8s/reflector.c, run by bin/k8s_watch) against
# the test API server: the request sequence client-go makes, events, bookmarks,
# 410 in-stream and as HTTP, 429 + Retry-After, a server restart, token
# rotation through a token file, 403, a CRD removed and installed, chunked
# events. Ground truth is the server's request log and its object state.
. "$(dirname "$0")/lib.sh"
W="$ROOT/bin/k8s_watch"
[ -x "$W" ] || fail "build bin/k8s_watch first (make)"

start_apiserver --bookmark-interval 1
put_objects "$(ns_obj apps)" "$(ns_obj infra)"
objs=()
for i in 1 2 3 4 5 6 7; do objs+=("$(route_obj apps r$i r$i.test)"); done
put_objects "${objs[@]}"
# the agent's token comes from a file, so it can rotate
echo "$TOKEN" >"$T/token"
sed -i "s|    token: $TOKEN|    tokenFile: $T/token|" "$KUBECONFIG"

HR=gateway.networking.k8s.io/v1/httproutes
# each scenario starts from the initial 0.8 s backoff (client-go: after 2 min)
export MILOMETER_K8S_BACKOFF_RESET_S=3
sleep_reset() { sleep 3.2; } # let the backoff reset between fault scenarios
K8S_WATCH_PAGE=3 "$W" --resource $HR --stats "$T/st.json" >"$T/events" 2>"$T/watch.err" &
PIDS+=($!)
ST="$T/st.json"

t_initial_list_paged() {
	wait_for 10 stat_is "$ST" synced 1 || fail "never synced: $(cat "$T/watch.err")"
	[ "$(count_lines "$T/events" '^ADDED apps/r')" = 7 ] || fail "expected 7 ADDED: $(cat "$T/events")"
	requests >"$T/req"
	grep -q 'GET /apis/gateway.networking.k8s.io/v1/httproutes?resourceVersion=0&limit=3 200' "$T/req" ||
		fail "first list is not resourceVersion=0&limit=3: $(head -3 "$T/req")"
	[ "$(grep -c 'httproutes?continue=' "$T/req")" = 2 ] || fail "7 objects in pages of 3 need 2 continue requests"
	# the watch: from the list's RV, bookmarks on, timeoutSeconds in [300, 600]
	local w rv to
	w=$(grep -m1 'watch=true' "$T/req") || fail "no watch"
	rv=$(echo "$w" | sed -n 's/.*resourceVersion=\([0-9]*\).*/\1/p')
	to=$(echo "$w" | sed -n 's/.*timeoutSeconds=\([0-9]*\).*/\1/p')
	echo "$w" | grep -q 'allowWatchBookmarks=true' || fail "no allowWatchBookmarks: $w"
	[ -n "$rv" ] && [ "$rv" -gt 1 ] || fail "watch RV not the list's: $w"
	[ "$to" -ge 300 ] && [ "$to" -le 600 ] || fail "timeoutSeconds $to not in [300,600]"
}

t_events_and_bookmarks() {
	kubectl apply -f - >/dev/null <<EOY || fail "kubectl apply"
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: k1, namespace: apps}
spec: {hostnames: [k1.test]}
EOY
	wait_for 5 has_line "$T/events" '^ADDED apps/k1 ' || fail "no ADDED for k1"
	kubectl patch httproute -n apps k1 --type merge -p '{"spec":{"hostnames":["k2.test"]}}' >/dev/null
	wait_for 5 has_line "$T/events" '^UPDATED apps/k1 ' || fail "no UPDATED for k1"
	kubectl delete httproute -n apps k1 >/dev/null
	wait_for 5 has_line "$T/events" '^DELETED apps/k1 ' || fail "no DELETED for k1"
	wait_for 5 stat_ge "$ST" bookmarks 2 || fail "no bookmarks"
	stat_is "$ST" relists 0 || fail "relisted without cause"
}

t_gone_in_stream_relists_and_deletes() {
	# r7 vanishes without an event (lost to compaction), then the
	# history is compacted and the open watch gets ERROR 410 in-stream
	ctl /ctl/delete '{"resource":"httproutes","namespace":"apps","name":"r7","silent":true}' >/dev/null
	sleep 0.3 # nothing to poll: the point is that no event arrives
	has_line "$T/events" '^DELETED apps/r7 ' && fail "a silent delete produced an event"
	ctl /ctl/compact '{"kill_watches":true}' >/dev/null
	wait_for 10 stat_ge "$ST" relists 1 || fail "no relist after the in-stream 410"
	wait_for 5 has_line "$T/events" '^DELETED apps/r7 ' || fail "relist did not delete r7"
	stat_ge "$ST" errors.410 1 || fail "410 not counted"
	# a relist that returns the same objects changes nothing
	[ "$(grep -c . "$T/events")" = "$(grep -cE '^(ADDED|UPDATED|DELETED)' "$T/events")" ] || fail "junk in events"
	[ "$(count_lines "$T/events" '^UPDATED apps/r[1-6] ')" = 0 ] || fail "relist fired updates for unchanged objects"
	requests | grep 'httproutes?resourceVersion=[0-9]' | tail -1 | grep -qv 'limit=' ||
		fail "the relist after a watch 410 should read at the last RV, unpaged"
}

t_gone_http_relists() {
	local r0
	sleep_reset
	r0=$(jget "$ST" relists)
	ctl /ctl/fault '{"match":"watch=true","status":410,"count":1}' >/dev/null
	ctl /ctl/close_watches '{}' >/dev/null
	wait_for 15 stat_ge "$ST" relists $((r0 + 1)) || fail "no relist after HTTP 410"
}

t_429_retry_after() {
	local r0 t429 tnext
	sleep_reset
	r0=$(jget "$ST" relists)
	ctl /ctl/fault '{"match":"watch=true","status":429,"retry_after":2,"count":1}' >/dev/null
	ctl /ctl/close_watches '{}' >/dev/null
	wait_for 10 bash -c "curl -s http://127.0.0.1:$CTL_PORT/ctl/requests | grep -q '\"code\": 429'" || fail "no 429 served"
	put_objects "$(route_obj apps after429 a.test)"
	wait_for 10 has_line "$T/events" '^ADDED apps/after429 ' || fail "watch did not resume after 429"
	requests >"$T/req"
	t429=$(grep 'watch=true.* 429 ' "$T/req" | tail -1 | awk '{print $4}')
	tnext=$(awk -v t="$t429" '$2 ~ /watch=true/ && $4 > t {print $4; exit}' "$T/req")
	python3 -c "import sys; sys.exit(0 if $tnext - $t429 >= 1.95 else 1)" ||
		fail "re-watched $(python3 -c "print(round($tnext - $t429, 2))") s after a 429 with Retry-After: 2"
	stat_is "$ST" relists "$r0" || fail "a 429 on watch must not relist"
}

t_server_restart() {
	local r0
	r0=$(jget "$ST" relists)
	stop_apiserver
	sleep 1.5 # the API is down for a while: nothing to poll
	wait_for 10 stat_ge "$ST" errors.transport 1 || fail "refused connections not counted"
	start_apiserver --bookmark-interval 1
	sed -i "s|    token: $TOKEN|    tokenFile: $T/token|" "$KUBECONFIG"
	put_objects "$(route_obj apps afterrestart b.test)"
	wait_for 40 has_line "$T/events" '^ADDED apps/afterrestart ' || fail "no event after the restart"
	# same RVs after a restart (etcd keeps them): the watch resumes, no relist
	stat_is "$ST" relists "$r0" || fail "relisted after a restart that kept the RV"
}

t_token_rotation() {
	local new=rot-$RANDOM w0
	w0=$(jget "$ST" watches)
	ctl /ctl/tokens "{\"valid\":[\"$new\"]}" >/dev/null
	echo "$new" >"$T/token.tmp" && mv "$T/token.tmp" "$T/token"
	ctl /ctl/close_watches '{}' >/dev/null
	wait_for 20 stat_ge "$ST" watches $((w0 + 1)) || fail "no new watch after the close"
	put_objects "$(route_obj apps afterrotation c.test)"
	wait_for 40 has_line "$T/events" '^ADDED apps/afterrotation ' || fail "no event after token rotation"
	stat_ge "$ST" token_rereads_401 1 || fail "the 401 did not re-read the token file"
}

t_split_events() {
	sleep_reset
	ctl /ctl/split '{"max":5}' >/dev/null
	ctl /ctl/close_watches '{}' >/dev/null
	for i in 1 2 3; do put_objects "$(route_obj apps split$i s$i.test)"; done
	wait_for 15 has_line "$T/events" '^ADDED apps/split3 ' || fail "events split in 1-5 byte chunks were lost"
	ctl /ctl/split '{"max":0}' >/dev/null
	stat_is "$ST" errors.decode 0 || fail "decode errors on split events"
}

t_forbidden_and_absent() {
	local MD=telemetry.miloapis.com/v1alpha1/metricpolicies
	ctl /ctl/deny '{"user":"admin","verb":"list","group":"telemetry.miloapis.com","resource":"metricpolicies"}' >/dev/null
	"$W" --resource $MD --stats "$T/st2.json" >"$T/ev2" 2>"$T/err2" &
	PIDS+=($!)
	wait_for 10 stat_is "$T/st2.json" state forbidden || fail "403 not reported as forbidden"
	wait_for 10 stat_ge "$T/st2.json" errors.403 2 || fail "403 not retried"
	[ "$(grep -c 'RBAC forbids list on metricpolicies.telemetry.miloapis.com' "$T/err2")" = 1 ] ||
		fail "want one clear 403 line: $(cat "$T/err2")"
	grep -q 'verb "list" on resource "metricpolicies" in API group "telemetry.miloapis.com"' "$T/err2" ||
		fail "the 403 line must name verb, resource, group"
	ctl /ctl/allow '{"user":"admin","verb":"list","group":"telemetry.miloapis.com","resource":"metricpolicies"}' >/dev/null
	# CRD removed: absent, quietly; installed again: picked up
	ctl /ctl/crd '{"resource":"metricpolicies","installed":false}' >/dev/null
	wait_for 40 stat_is "$T/st2.json" state absent || fail "a missing CRD is not 'absent': $(cat "$T/st2.json")"
	ctl /ctl/crd '{"resource":"metricpolicies","installed":true}' >/dev/null
	put_objects '{"apiVersion":"telemetry.miloapis.com/v1alpha1","kind":"MetricPolicy","metadata":{"name":"p1"},"spec":{}}'
	wait_for 40 has_line "$T/ev2" '^ADDED p1 ' || fail "the late CRD's object was not picked up"
	ctl /ctl/crd '{"resource":"metricpolicies","installed":false}' >/dev/null
	wait_for 40 has_line "$T/ev2" '^DELETED p1 ' || fail "removing the CRD did not delete its objects"
	[ "$(grep -c 'not served' "$T/err2")" -le 2 ] || fail "absent CRD logged more than once per absence"
}

t_field_selector_pods() {
	put_objects '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-n1","namespace":"apps"},"spec":{"nodeName":"n1"}}' \
		'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-n2","namespace":"apps"},"spec":{"nodeName":"n2"}}'
	"$W" --resource core/v1/pods --field-selector spec.nodeName=n1 --stats "$T/st3.json" >"$T/ev3" 2>&1 &
	PIDS+=($!)
	wait_for 10 stat_is "$T/st3.json" synced 1 || fail "pods not synced"
	put_objects '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q-n1","namespace":"apps"},"spec":{"nodeName":"n1"}}' \
		'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q-n2","namespace":"apps"},"spec":{"nodeName":"n2"}}'
	wait_for 5 has_line "$T/ev3" '^ADDED apps/q-n1 ' || fail "no pod event"
	has_line "$T/ev3" 'n2' && fail "a pod of another node was seen: $(cat "$T/ev3")"
	requests | grep -q 'pods?fieldSelector=spec.nodeName%3Dn1&resourceVersion=0' || fail "pods not listed by node"
}

t_in_cluster() {
	# no kubeconfig: KUBERNETES_SERVICE_HOST/PORT and the service account's
	# token and CA (MILOMETER_SA_DIR stands in for /var/run/secrets/...)
	local sa="$T/sa"
	mkdir -p "$sa"
	cp "$T/pki/ca.crt" "$sa/ca.crt"
	cat "$T/token" >"$sa/token"
	env -u KUBECONFIG HOME=/nonexistent KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=$API_PORT \
		MILOMETER_SA_DIR="$sa" "$W" --resource $HR --stats "$T/st4.json" >"$T/ev4" 2>"$T/err4" &
	PIDS+=($!)
	wait_for 10 stat_is "$T/st4.json" synced 1 || fail "in-cluster config did not sync: $(cat "$T/err4")"
	has_line "$T/ev4" '^ADDED apps/r1 ' || fail "in-cluster list empty"
}

run_tests t_initial_list_paged t_events_and_bookmarks t_gone_in_stream_relists_and_deletes \
	t_gone_http_relists t_429_retry_after t_server_restart t_token_rotation t_split_events \
	t_forbidden_and_absent t_field_selector_pods t_in_cluster
