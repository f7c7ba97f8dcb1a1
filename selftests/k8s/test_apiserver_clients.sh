#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Is the test API server faithful where milometer relies on it? Real
# clients judge it: kubectl (client-go; 1.32, or Debian's 1.20) for get,
# apply, get --watch, patch and server-side apply on /status (a kubectl
# without --subresource, before 1.24: those /status writes are sent by
# python3-kubernetes instead); Debian's python3-kubernetes for list/watch
# and the in-stream 410. A client failing here is a bug of the
# stand-in, not a pass for milometer.
. "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || fail "kubectl is not installed"
start_apiserver --bookmark-interval 1
# Writes to /status: kubectl's --subresource, else python3-kubernetes.
if kubectl apply --help 2>/dev/null | grep -q -- '--subresource'; then
	STATUS_CLIENT=kubectl
else
	STATUS_CLIENT=python3-kubernetes
fi
log "$(kubectl version --client --short 2>/dev/null || kubectl version --client | head -1); /status written by $STATUS_CLIENT"
# status_apply MANAGER FORCE(0|1) FILE: server-side apply on /status
status_apply() {
	if [ $STATUS_CLIENT = kubectl ]; then
		local force=
		[ "$2" = 0 ] || force=--force-conflicts
		kubectl apply --server-side --subresource=status --field-manager="$1" $force -f "$3"
	else
		$PY "$K8S_DIR/py_status_write.py" "$KUBECONFIG" apply metricpolicies "$1" "$2" "$3"
	fi
}
# status_merge NAME JSON: a JSON merge patch on a MetricPolicy's /status
status_merge() {
	if [ $STATUS_CLIENT = kubectl ]; then
		kubectl patch metricpolicy "$1" --subresource=status --type merge -p "$2"
	else
		$PY "$K8S_DIR/py_status_write.py" "$KUBECONFIG" merge \
			"/apis/telemetry.miloapis.com/v1alpha1/metricpolicies/$1/status" "$2"
	fi
}

t_kubectl_apply_get() {
	kubectl apply -f - >/dev/null <<EOY || fail "apply namespaces"
apiVersion: v1
kind: Namespace
metadata: {name: apps, labels: {team: a}}
---
apiVersion: v1
kind: Namespace
metadata: {name: infra}
EOY
	kubectl apply -f - >"$T/apply.out" <<EOY || fail "apply route: $(cat "$T/apply.out")"
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r1, namespace: apps}
spec: {hostnames: [a.test], parentRefs: [{name: gw, namespace: infra}]}
EOY
	grep -q 'httproute.gateway.networking.k8s.io/r1 created' "$T/apply.out" || fail "$(cat "$T/apply.out")"
	kubectl get httproutes -A | grep -qE '^apps +r1 ' || fail "get -A"
	[ "$(kubectl get ns -l team=a -o name)" = namespace/apps ] || fail "label selector"
	kubectl apply -f - <<EOY | grep -q configured || fail "re-apply"
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r1, namespace: apps}
spec: {hostnames: [b.test], parentRefs: [{name: gw, namespace: infra}]}
EOY
	[ "$(kubectl get httproute -n apps r1 -o jsonpath='{.spec.hostnames[0]} {.metadata.generation}')" = "b.test 2" ] ||
		fail "update or generation wrong"
	kubectl get pods -A --field-selector spec.nodeName=n1 >/dev/null 2>"$T/e" || fail "pods field selector: $(cat "$T/e")"
	kubectl get httproutes -A --field-selector spec.bogus=x 2>&1 | grep -q 'field label not supported' ||
		fail "an unsupported field selector must be refused"
}

t_kubectl_watch() {
	kubectl get httproutes -n apps --watch --output-watch-events -o json >"$T/w.json" 2>"$T/w.err" &
	local wp=$!
	PIDS+=($wp)
	wait_for 10 grep -sqE '"type": ?"ADDED"' "$T/w.json" || fail "no initial ADDED: $(cat "$T/w.err")"
	kubectl apply -f - >/dev/null <<EOY
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: w1, namespace: apps}
spec: {hostnames: [w.test]}
EOY
	kubectl patch httproute -n apps w1 --type merge -p '{"spec":{"hostnames":["w2.test"]}}' >/dev/null
	kubectl delete httproute -n apps w1 >/dev/null
	wait_for 10 grep -qE '"type": ?"DELETED"' "$T/w.json" || fail "no DELETED in kubectl's watch"
	python3 - "$T/w.json" <<'PY' || fail "kubectl's events: $(grep '"type"' "$T/w.json" | tr -d ' ' | tr '\n' ' ')"
import json, sys
dec, s, evs = json.JSONDecoder(), open(sys.argv[1]).read(), []
i = 0
while i < len(s):
    while i < len(s) and s[i].isspace(): i += 1
    if i >= len(s): break
    o, i = dec.raw_decode(s, i)
    evs.append((o["type"], o["object"]["metadata"]["name"]))
want = [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]
sys.exit(0 if [e for e in evs if e[1] == "w1"] == want else 1)
PY
	kill $wp
}

t_kubectl_status_ssa() {
	kubectl apply -f - >/dev/null <<EOY || fail "apply policy"
apiVersion: telemetry.miloapis.com/v1alpha1
kind: MetricPolicy
metadata: {name: p1}
spec: {targetRefs: [{kind: HTTPRoute, name: r1}]}
EOY
	cat >"$T/st.yaml" <<EOY
apiVersion: telemetry.miloapis.com/v1alpha1
kind: MetricPolicy
metadata: {name: p1}
status:
  conditions:
  - {type: Accepted, status: "True", reason: Accepted, message: ok, observedGeneration: 1, lastTransitionTime: "2026-01-01T00:00:00Z"}
EOY
	status_apply milometer 1 "$T/st.yaml" >"$T/ssa.out" 2>&1 || fail "SSA on /status: $(cat "$T/ssa.out")"
	requests | grep -qE 'PATCH /apis/telemetry.miloapis.com/v1alpha1/metricpolicies/p1/status\?fieldManager=milometer(&fieldValidation=Strict)?&force=true' ||
		fail "$STATUS_CLIENT did not PATCH /status with fieldManager and force: $(requests | grep PATCH)"
	[ "$(kubectl get metricpolicy p1 -o jsonpath='{.status.conditions[0].type}={.status.conditions[0].status} gen={.metadata.generation}')" = "Accepted=True gen=1" ] ||
		fail "status not applied, or generation bumped by a status write"
	# kubectl >= 1.21 hides managedFields unless asked; 1.20 always shows them
	local mf=--show-managed-fields
	kubectl get --help | grep -q -- "$mf" || mf=
	kubectl get metricpolicy p1 $mf -o json |
		python3 -c 'import json,sys; m=json.load(sys.stdin)["metadata"]["managedFields"]; sys.exit(0 if any(e["manager"]=="milometer" and e.get("subresource")=="status" and e["operation"]=="Apply" for e in m) else 1)' ||
		fail "no managedFields entry for milometer on status"
	# another manager setting the same condition differently: conflict, then force
	sed 's/status: "True"/status: "False"/' "$T/st.yaml" >"$T/st2.yaml"
	status_apply other 0 "$T/st2.yaml" >"$T/c.out" 2>&1 &&
		fail "no conflict for a field owned by milometer"
	grep -qi conflict "$T/c.out" || fail "conflict not reported: $(cat "$T/c.out")"
	status_apply other 1 "$T/st2.yaml" >/dev/null ||
		fail "force did not take ownership"
	[ "$(kubectl get metricpolicy p1 -o jsonpath='{.status.conditions[0].status}')" = False ] || fail "forced value not applied"
	# the same apply again changes nothing (no new resourceVersion)
	local rv1 rv2
	rv1=$(kubectl get metricpolicy p1 -o jsonpath='{.metadata.resourceVersion}')
	status_apply other 1 "$T/st2.yaml" >/dev/null
	rv2=$(kubectl get metricpolicy p1 -o jsonpath='{.metadata.resourceVersion}')
	[ "$rv1" = "$rv2" ] || fail "a no-op apply wrote ($rv1 -> $rv2)"
	# merge patch on /status, and status ignored on the main resource
	status_merge p1 '{"status":{"conditions":[{"type":"Programmed","status":"True","reason":"Done"}]}}' >/dev/null ||
		fail "merge patch on /status"
	[ "$(kubectl get metricpolicy p1 -o jsonpath='{.status.conditions[*].type}')" = Programmed ] ||
		fail "a JSON merge patch replaces the whole conditions list"
	kubectl patch metricpolicy p1 --type merge -p '{"status":{"conditions":[]}}' >/dev/null
	[ "$(kubectl get metricpolicy p1 -o jsonpath='{.status.conditions[*].type}')" = Programmed ] ||
		fail "a write to the main resource changed status"
	kubectl patch metricpolicy p1 --type strategic -p '{"spec":{"x":1}}' >"$T/smp" 2>&1 &&
		fail "strategic merge patch on a custom resource must be refused"
	grep -q 'UnsupportedMediaType\|unknown format\|415' "$T/smp" || true
}

t_kubectl_auth() {
	KUBECONFIG="$T/bad" write_kubeconfig "$T/bad" wrong-token
	kubectl --kubeconfig "$T/bad" get ns 2>&1 | grep -qi 'unauthorized\|must be logged in' ||
		fail "a bad token must be 401"
	ctl /ctl/deny '{"user":"admin","verb":"list","group":"","resource":"pods"}' >/dev/null
	kubectl get pods -A 2>&1 | grep -q 'forbidden: User "admin" cannot list resource "pods"' ||
		fail "403 text: $(kubectl get pods -A 2>&1)"
	ctl /ctl/allow '{"user":"admin","verb":"list","group":"","resource":"pods"}' >/dev/null
	# client certificate (CN = user)
	cat >"$T/cert.kc" <<EOK
apiVersion: v1
kind: Config
clusters: [{name: t, cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority: $T/pki/ca.crt}}]
users: [{name: u, user: {client-certificate: $T/pki/client.crt, client-key: $T/pki/client.key}}]
contexts: [{name: t, context: {cluster: t, user: u}}]
current-context: t
EOK
	kubectl --kubeconfig "$T/cert.kc" get ns >/dev/null || fail "client certificate auth"
}

t_python_client() {
	$PY "$K8S_DIR/py_watch_client.py" "$KUBECONFIG" "http://127.0.0.1:$CTL_PORT" >"$T/py.out" 2>&1 ||
		fail "python3-kubernetes: $(cat "$T/py.out")"
	cat "$T/py.out" | sed 's/^/    /'
}

run_tests t_kubectl_apply_get t_kubectl_watch t_kubectl_status_ssa t_kubectl_auth t_python_client
