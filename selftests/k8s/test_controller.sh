#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `milometer controller` against the test API server: two replicas, one
# leader by Lease; the leader writes Accepted/ResolvedRefs of every
# MetricDefinition and MetricPolicy by server-side apply on /status (field
# manager milometer, force), never rewrites unchanged conditions (not after
# an unrelated change, not after a leader change), and writes again with
# the new observedGeneration when a spec changes. The leader alone also
# sets the ResourceFields series (one producer for the cluster) on its
# /metrics; after a failover the new leader has them. Ground truth: the
# server's request log and the objects as kubectl reads them.
. "$(dirname "$0")/lib.sh"
M="$ROOT/bin/milometer"
[ -x "$M" ] || fail "build bin/milometer first"
start_apiserver
EX="$ROOT/deploy/examples/contract"
# the seed's twins, which conflict with the examples on purpose
TWINS="$ROOT/selftests/unit/testdata/contract/seed-twins"
printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: milometer}\n' | kubectl apply -f - >/dev/null
kubectl apply -f "$EX" -f "$TWINS" >/dev/null || fail "kubectl apply examples"
NDEF=$(ls "$EX"/*metricdefinition*.yaml "$TWINS"/*metricdefinition*.yaml | wc -l)
NPOL=$(ls "$EX"/*metricpolicy*.yaml "$TWINS"/*metricpolicy*.yaml | wc -l)

patches() { requests | grep -c "^PATCH .*/status?fieldManager=milometer&force=true 200" || true; }
holder() { kubectl get lease -n milometer milometer-controller -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
start_ctrl() {
	local port
	port=$(free_port)
	eval "PORT_$1=$port"
	"$M" controller --identity "$1" --leader-elect-namespace milometer \
		--prometheus-listen "127.0.0.1:$port" >"$T/$1.log" 2>&1 &
	PIDS+=($!)
	eval "PID_$1=$!"
}
all_written() { [ "$(patches)" -ge $((NDEF + NPOL)) ]; }

start_ctrl c1
start_ctrl c2

t_one_leader_writes_status() {
	wait_for 20 bash -c '[ -n "$(kubectl get lease -n milometer milometer-controller -o jsonpath="{.spec.holderIdentity}" 2>/dev/null)" ]' ||
		fail "no leader: $(cat "$T/c1.log" "$T/c2.log")"
	wait_for 20 all_written || fail "not every object got status: $(patches) of $((NDEF + NPOL)); $(tail -n 3 "$T/c1.log" "$T/c2.log")"
	local h
	h=$(holder)
	[ "$h" = c1 ] || [ "$h" = c2 ] || fail "holder $h"
	# every write came from the leader
	requests | grep '/status?fieldManager=milometer' | grep -v "milometer-controller/$h\$" | grep -q . &&
		fail "the non-leader wrote status"
	grep -q 'is the leader' "$T/$h.log" || fail "leader did not say so"
	[ "$(grep -c 'is the leader' "$T/c1.log" "$T/c2.log" | awk -F: '{s+=$2} END {print s}')" = 1 ] ||
		fail "more than one replica led"
	# conditions as metav1.Condition, with observedGeneration
	kubectl get metricdefinition gateway-httproute-created -o json >"$T/d.json"
	python3 - "$T/d.json" <<'PY' || fail "MetricDefinition status: $(cat "$T/d.json")"
import json, sys
o = json.load(open(sys.argv[1]))
c = {x["type"]: x for x in o["status"]["conditions"]}
a = c["Accepted"]
assert a["status"] == "True" and a["reason"] == "TelemetryRegistered", a
assert a["observedGeneration"] == o["metadata"]["generation"], a
assert a["lastTransitionTime"].endswith("Z"), a
assert "Programmed" not in c, c
PY
	# the examples and twins hold two pairs of policies that target the same metric
	# from the same source (*condition-status-policy, *upstream-latency-
	# policy): in each, the newer (creationTimestamp, then name) is
	# Conflicted; which one depends on whether kubectl's creates crossed a
	# second, so the test counts one per pair, not names
	nconflicted() { kubectl get metricpolicy -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Accepted")].reason}{"\n"}{end}' | grep -c '^Conflicted$'; }
	pair() { kubectl get metricpolicy "gateway-httproute-$1" "httproute-$1" -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Accepted")].reason}{"\n"}{end}' | grep -c '^Conflicted$'; }
	conflicted() { [ "$(pair condition-status-policy)" = 1 ] && [ "$(pair upstream-latency-policy)" = 1 ] && [ "$(nconflicted)" = 2 ]; }
	wait_for 10 conflicted ||
		fail "not exactly one policy per conflicting pair is Accepted=False Conflicted: $(kubectl get metricpolicy -o jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Accepted")].reason}{"\n"}{end}')"
	[ "$(kubectl get metricpolicy gateway-httproute-created-policy -o jsonpath='{.status.conditions[?(@.type=="ResolvedRefs")].status}')" = True ] ||
		fail "ResolvedRefs missing"
}

# created_series REPLICA ROUTE: REPLICA's /metrics has ROUTE's
# httproute.created series (extra-httproute-created-metricpolicy)
created_series() {
	local port
	eval "port=\$PORT_$1"
	curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null |
		grep -E "^gateway_networking_k8s_io_httproute_created[a-z_]*\{.*resource_name=\"$2\"" | grep -q .
}
follower() { [ "$(holder)" = c1 ] && echo c2 || echo c1; }

t_resource_fields_from_leader() {
	local h f
	put_objects "$(ns_obj apps)" "$(route_obj apps rf-a a.test)"
	h=$(holder)
	f=$(follower)
	wait_for 15 created_series "$h" rf-a ||
		fail "the leader ($h) has no httproute.created series for rf-a: $(tail -3 "$T/$h.log")"
	# its value is the route's creationTimestamp, as the policy's CEL says
	local want got port
	want=$(date -d "$(kubectl get httproute -n apps rf-a -o jsonpath='{.metadata.creationTimestamp}')" +%s)
	eval "port=\$PORT_$h"
	got=$(curl -fsS "http://127.0.0.1:$port/metrics" |
		grep -E '^gateway_networking_k8s_io_httproute_created[a-z_]*\{.*resource_name="rf-a"' | awk '{print $NF}')
	[ "$(printf '%.0f' "$got")" = "$want" ] || fail "rf-a created: $got, want $want"
	sleep 2 # a few follower ticks: it must still set nothing
	created_series "$f" rf-a && fail "the follower ($f) produced ResourceFields series too"
	# the cluster's id on every series, as the agents add it
	kubectl apply -f "$ROOT/deploy/examples/contract-clusterproperties.yaml" >/dev/null ||
		fail "kubectl apply ClusterProperties"
	with_id() {
		curl -fsS "http://127.0.0.1:$port/metrics" |
			grep -E '^gateway_networking_k8s_io_httproute_created[a-z_]*\{.*resource_name="rf-a"' |
			grep -q 'k8s_cluster_id="edge-eu-west-1"'
	}
	wait_for 15 with_id || fail "no k8s.cluster.id on the leader's series: $(curl -fsS "http://127.0.0.1:$port/metrics" | grep rf-a)"
	return 0
}

t_resource_fields_follow_leader() {
	local h
	h=$(holder)
	put_objects "$(route_obj apps rf-b b.test)"
	wait_for 15 created_series "$h" rf-b ||
		fail "the new leader ($h) has no series for rf-b: $(tail -3 "$T/$h.log")"
	created_series "$h" rf-a || fail "the new leader ($h) lost rf-a's series"
}

t_no_rewrites() {
	local p0
	p0=$(patches)
	put_objects "$(ns_obj apps)" "$(route_obj apps unrelated u.test)"
	sleep 4 # two lease periods and several sync ticks: nothing may be written
	[ "$(patches)" = "$p0" ] || fail "unchanged conditions rewritten: $p0 -> $(patches)"
}

t_failover_keeps_status() {
	local h other p0 t0
	h=$(holder)
	other=$([ "$h" = c1 ] && echo c2 || echo c1)
	p0=$(patches)
	t0=$SECONDS
	eval "kill \$PID_$h"
	wait_for 25 bash -c "[ \"\$(kubectl get lease -n milometer milometer-controller -o jsonpath='{.spec.holderIdentity}')\" = $other ]" ||
		fail "$other did not take over: $(holder)"
	echo "    failover to $other in $((SECONDS - t0)) s"
	[ "$(kubectl get lease -n milometer milometer-controller -o jsonpath='{.spec.leaseTransitions}')" -ge 1 ] ||
		fail "leaseTransitions not bumped"
	sleep 3 # the new leader's first sync
	[ "$(patches)" = "$p0" ] || fail "the new leader rewrote unchanged conditions: $p0 -> $(patches)"
}

t_spec_change_writes_once() {
	local p0
	p0=$(patches)
	kubectl patch metricdefinition gateway-httproute-created --type merge \
		-p '{"spec":{"description":"changed by the test"}}' >/dev/null || fail "patch spec"
	wait_for 10 bash -c "[ \"\$(kubectl get metricdefinition gateway-httproute-created -o jsonpath='{.status.conditions[0].observedGeneration}')\" = 2 ]" ||
		fail "observedGeneration not 2: $(kubectl get metricdefinition gateway-httproute-created -o jsonpath='{.status}')"
	sleep 3
	[ "$(patches)" = $((p0 + 1)) ] || fail "want exactly one status write, got $(($(patches) - p0))"
}

# the seed's change management (t_spec_change_writes_once left an unknown
# field, removed here): a definition's identity (name, unit,
# instrument) is stable; an edit of it is refused with a condition and the
# accepted version stays in effect (the leader still serves its series)
t_immutable_field_reported() {
	local h
	h=$(holder)
	kubectl patch metricdefinition gateway-httproute-created --type merge \
		-p '{"spec":{"description":null,"metric":{"instrument":{"type":"Gauge","unit":"ms"}}}}' >/dev/null ||
		fail "patch unit"
	wait_for 10 bash -c "[ \"\$(kubectl get metricdefinition gateway-httproute-created -o jsonpath='{.status.conditions[?(@.type==\"Accepted\")].reason}')\" = ImmutableFieldChanged ]" ||
		fail "no ImmutableFieldChanged: $(kubectl get metricdefinition gateway-httproute-created -o jsonpath='{.status}')"
	kubectl get metricdefinition gateway-httproute-created -o jsonpath='{.status.conditions[?(@.type=="Accepted")].message}' |
		grep -q 'stays in effect' || fail "the condition does not say the accepted version stays"
	sleep 6 # a collection after the refused edit
	created_series "$h" rf-a || fail "the accepted definition's series are gone after a refused edit"
	curl -fsS "http://127.0.0.1:$(eval echo \$PORT_$h)/metrics" | grep -q '^gateway_networking_k8s_io_httproute_created_seconds' ||
		fail "the series' unit changed with the refused edit"
}

# /ui beside /metrics: the page, and its view (no agent series in the
# controller's own store, and no --prometheus-url: an empty table)
t_ui_served() {
	local port
	eval "port=\$PORT_$(holder)"
	curl -fsS "http://127.0.0.1:$port/ui" | grep -q '<table id="routes">' ||
		fail "the controller serves no /ui page"
	curl -fsS "http://127.0.0.1:$port/ui/top.json" | grep -q '"rows":\[\]' ||
		fail "/ui/top.json: $(curl -sS "http://127.0.0.1:$port/ui/top.json")"
}

# a policy with a misspelt source metric and one with a regular expression
# RE2 refuses, applied together: each is rejected alone with its reason
# (the misspelling with the closest valid name), every other policy keeps
# its status and the leader keeps serving its series
t_bad_policies_rejected_alone() {
	local h
	h=$(holder)
	sed -e 's/name: gateway-httproute-upstream-request-count-policy/name: typo-policy/' \
	    -e 's/envoy.cluster.upstream_rq_total/envoy.cluster.upstream_rq_totl/' \
	    "$EX/seed-scenario-upstream-request-count-metricpolicy.yaml" >"$T/bad.yaml"
	echo --- >>"$T/bad.yaml"
	sed -e 's/name: gateway-httproute-upstream-request-count-policy/name: hostile-policy/' \
	    -e 's|^          attributeSelectors:|          attributeFilters: [{key: k8s.httproute.name, regex: "(.{0,255}){0,255}"}]\n          attributeSelectors:|' \
	    "$EX/seed-scenario-upstream-request-count-metricpolicy.yaml" >>"$T/bad.yaml"
	grep -q 'regex: "(.{0,255}){0,255}"' "$T/bad.yaml" || fail "the hostile policy was not built: $(cat "$T/bad.yaml")"
	kubectl apply -f "$T/bad.yaml" >/dev/null || fail "kubectl apply the bad policies"
	reason() { kubectl get metricpolicy "$1" -o jsonpath='{.status.conditions[?(@.type=="Accepted")].reason}' 2>/dev/null; }
	both() { [ "$(reason typo-policy)" = UnknownSourceMetric ] && [ "$(reason hostile-policy)" = InvalidField ]; }
	wait_for 15 both || fail "typo-policy: '$(reason typo-policy)', hostile-policy: '$(reason hostile-policy)'"
	# counted in the controller's self-metric: one series per reason,
	# valued the number of policies rejected for it
	rejected() {
		curl -fsS "http://127.0.0.1:$(eval echo \$PORT_$h)/metrics" 2>/dev/null |
			grep '^milometer_contract_objects{' | grep 'kind="MetricPolicy"' |
			grep 'type="Accepted"' | grep 'status="False"' | grep "reason=\"$1\"" |
			awk '{print $2}'
	}
	counted() { [ "$(rejected UnknownSourceMetric)" = 1 ] && [ "$(rejected InvalidField)" = 1 ]; }
	wait_for 15 counted || fail "milometer_contract_objects: UnknownSourceMetric '$(rejected UnknownSourceMetric)', InvalidField '$(rejected InvalidField)', want 1 and 1"
	kubectl get metricpolicy typo-policy -o jsonpath='{.status.conditions[?(@.type=="Accepted")].message}' |
		grep -q 'did you mean `envoy.cluster.upstream_rq_total`' || fail "the misspelling is not named with its fix"
	[ "$(reason gateway-httproute-upstream-request-count-policy)" = Accepted ] ||
		fail "a neighbour lost its status: $(reason gateway-httproute-upstream-request-count-policy)"
	[ "$(reason gateway-httproute-created-policy)" = Accepted ] || fail "created-policy lost its status"
	created_series "$h" rf-a || fail "the leader stopped serving series after the bad policies"
	kubectl delete -f "$T/bad.yaml" >/dev/null || fail "kubectl delete the bad policies"
}

run_tests t_one_leader_writes_status t_ui_served t_resource_fields_from_leader t_no_rewrites \
	t_failover_keeps_status t_resource_fields_follow_leader t_spec_change_writes_once \
	t_immutable_field_reported t_bad_policies_rejected_alone
