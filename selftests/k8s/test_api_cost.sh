#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What one agent costs the API server with 5 000 HTTPRoutes: requests and
# bytes for the initial sync (every watch the agent opens: k8s_watch --api
# runs the agent's own k8s_api), then for an idle window (IDLE_S, default
# 60 s: no relist, no new request while watches are healthy), then for one
# route changed. Figures from the server's own accounting per user agent.
. "$(dirname "$0")/lib.sh"
W="$ROOT/bin/k8s_watch"
N=${ROUTES:-5000}
IDLE_S=${IDLE_S:-60}
UA=milometer-k8s-watch
start_apiserver

t_cost() {
	local i b objs=() nsn=50
	put_objects "$(ns_obj infra)" \
		'{"apiVersion":"gateway.networking.k8s.io/v1","kind":"Gateway","metadata":{"name":"gw","namespace":"infra"},"spec":{"gatewayClassName":"c","listeners":[{"name":"http","port":80,"protocol":"HTTP","allowedRoutes":{"namespaces":{"from":"All"}}}]}}'
	for ((i = 0; i < nsn; i++)); do objs+=("$(ns_obj ns$i)"); done
	put_objects "${objs[@]}"
	for ((b = 0; b < N; b += 500)); do
		objs=()
		for ((i = b; i < b + 500 && i < N; i++)); do
			objs+=("$(route_obj ns$((i % nsn)) route-$i h$i.example.com /p$i)")
		done
		put_objects "${objs[@]}"
	done
	ctl /ctl/stats '{}' >/dev/null
	local t0=$SECONDS
	"$W" --api --node-name n1 --stats "$T/st.json" >"$T/snap" 2>"$T/w.err" &
	local wp=$!
	PIDS+=($wp)
	wait_for 120 grep -q "^SNAPSHOT $((N + nsn + 1 + 1))\$" "$T/snap" ||
		fail "no snapshot with all objects: $(tail -2 "$T/snap") $(cat "$T/w.err")"
	local sync_s=$((SECONDS - t0))
	ctl /ctl/stats >"$T/s1.json"
	local rq by wa rss
	rq=$(jget "$T/s1.json" "$UA.requests")
	by=$(jget "$T/s1.json" "$UA.bytes")
	wa=$(jget "$T/s1.json" "$UA.watches")
	rss=$(awk '/VmRSS/ {print $2}' /proc/$wp/status)
	echo "  initial sync, $N HTTPRoutes + $nsn namespaces: $rq requests ($wa watches), $by bytes from the server, ${sync_s}s, client RSS ${rss} kB"
	# one watch per selection: Gateways, HTTPRoutes, MetricDefinitions,
	# MetricPolicies, two ClusterProperties (by name), Namespaces, two
	# Service selectors (by Gateway label) and the node's Pods
	[ "$wa" -le 10 ] || fail "more watches than resources: $wa"
	# idle: nothing changes; bookmarks at the server's 60 s pace only
	ctl /ctl/stats '{}' >/dev/null
	sleep "$IDLE_S" # the idle window is the measurement itself
	ctl /ctl/stats >"$T/s2.json"
	rq=$(jget "$T/s2.json" "$UA.requests")
	by=$(jget "$T/s2.json" "$UA.bytes")
	echo "  idle ${IDLE_S}s: ${rq:-0} requests, ${by:-0} bytes (bookmarks on open watches)"
	[ "${rq:-0}" = 0 ] || fail "requests while idle: a periodic relist or reconnects"
	# one route changed
	ctl /ctl/stats '{}' >/dev/null
	local n0
	n0=$(grep -c SNAPSHOT "$T/snap")
	put_objects "$(route_obj ns1 route-1 changed.example.com /changed)"
	wait_for 10 bash -c "[ \$(grep -c SNAPSHOT '$T/snap') -gt $n0 ]" || fail "the change did not reach the snapshot"
	ctl /ctl/stats >"$T/s3.json"
	echo "  one HTTPRoute changed: $(jget "$T/s3.json" "$UA.requests") requests, $(jget "$T/s3.json" "$UA.bytes") bytes"
	stat_is "$T/st.json" requests "$(jget "$T/st.json" requests)" # file readable
}

run_tests t_cost
