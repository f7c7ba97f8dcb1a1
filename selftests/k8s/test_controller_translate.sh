#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `milometer controller --translate`: the leader keeps the contract's
# translations in the cluster (a PrometheusRule, ConfigMaps for the
# Collector and kube-state-metrics configs) equal to what
# `milometer translate` prints for the same objects, writes them only when
# the policies change (not again after an unrelated change, nor after a
# leader change), and reports Translated on every MetricPolicy: True, or
# False NotTranslatable naming the target and the reason.
. "$(dirname "$0")/lib.sh"
M="$ROOT/bin/milometer"
[ -x "$M" ] || fail "build bin/milometer first"
start_apiserver
EX="$ROOT/deploy/examples/contract"
for n in milometer monitoring demo; do
	printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n' $n | kubectl apply -f - >/dev/null
done
# not the seed's "complete" twins: which twin wins would depend on the second
# each was created in
mkdir -p "$T/contract"
cp "$EX"/extra-*.yaml "$EX"/seed-scenario-*.yaml "$T/contract/"
kubectl apply -f "$T/contract" >/dev/null || fail "kubectl apply contract"
kubectl apply -f "$ROOT/deploy/examples/contract-httproutes.yaml" >/dev/null || fail "kubectl apply routes"
TR=(--translate prometheusrule=monitoring/mm-rules --translate otelcol=monitoring/mm-otel
	--translate kube-state-metrics=monitoring/mm-ksm)
start_ctrl() {
	local port
	port=$(free_port)
	"$M" controller --identity "$1" --leader-elect-namespace milometer \
		--prometheus-listen "127.0.0.1:$port" "${TR[@]}" >"$T/$1.log" 2>&1 &
	PIDS+=($!)
	eval "PID_$1=$!"
}
writes() { requests | grep -cE "^PATCH /api(s/monitoring.coreos.com)?/v1/namespaces/monitoring/(prometheusrules|configmaps)/mm-[a-z]+\?fieldManager=milometer&force=true 20[01]" || true; }
all_there() {
	kubectl get prometheusrule -n monitoring mm-rules >/dev/null 2>&1 &&
		kubectl get configmap -n monitoring mm-otel >/dev/null 2>&1 &&
		kubectl get configmap -n monitoring mm-ksm >/dev/null 2>&1
}
# what `milometer translate` prints for the objects as the API has them
expected() {
	mkdir -p "$T/api"
	kubectl get metricdefinitions,metricpolicies,httproutes -A -o json >"$T/api/all.json"
	$PY - "$T/api/all.json" "$T/api/objects.yaml" <<'PY'
import json, sys, yaml
items = json.load(open(sys.argv[1]))["items"]
for o in items:
    o.pop("status", None)
    o["metadata"] = {k: v for k, v in o["metadata"].items()
                     if k in ("name", "namespace", "uid", "creationTimestamp", "generation")}
yaml.safe_dump_all(items, open(sys.argv[2], "w"))
PY
	"$M" translate -m "$T/api/objects.yaml" -t prometheus-rules --format prometheusrule \
		--name mm-rules --namespace monitoring -o "$T/exp-rules.yml" 2>/dev/null
	"$M" translate -m "$T/api/objects.yaml" -t otelcol -o "$T/exp-otel.yml" 2>/dev/null
	"$M" translate -m "$T/api/objects.yaml" -t kube-state-metrics -o "$T/exp-ksm.yml" 2>/dev/null
}
same_as_cli() {
	expected
	kubectl get prometheusrule -n monitoring mm-rules -o json >"$T/pr.json" &&
	kubectl get configmap -n monitoring mm-otel -o json >"$T/otel.json" &&
	kubectl get configmap -n monitoring mm-ksm -o json >"$T/ksm.json" &&
	$PY - "$T" 2>"$T/same.err" <<'PY'
import json, sys, yaml
t = sys.argv[1]
pr = json.load(open(t + "/pr.json"))
exp = yaml.safe_load(open(t + "/exp-rules.yml"))
assert pr["spec"] == exp["spec"], "PrometheusRule spec differs"
assert pr["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "milometer"
assert json.load(open(t + "/otel.json"))["data"]["otelcol.yaml"] == open(t + "/exp-otel.yml").read(), "otelcol"
assert json.load(open(t + "/ksm.json"))["data"]["custom-resource-state.yaml"] == open(t + "/exp-ksm.yml").read(), "ksm"
PY
}
translated() { # POLICY STATUS REASON
	[ "$(kubectl get metricpolicy "$1" -o jsonpath='{.status.conditions[?(@.type=="Translated")].status}/{.status.conditions[?(@.type=="Translated")].reason}')" = "$2/$3" ]
}

start_ctrl c1
start_ctrl c2

t_objects_written() {
	wait_for 30 all_there || fail "translations not written: $(tail -5 "$T/c1.log" "$T/c2.log")"
	wait_for 20 same_as_cli || fail "the cluster's translations differ from milometer translate"
	[ "$(writes)" -eq 3 ] || fail "$(writes) writes for 3 objects"
}

t_translated_conditions() {
	wait_for 20 translated gateway-httproute-upstream-latency-policy True Translated ||
		fail "latency policy: $(kubectl get metricpolicy gateway-httproute-upstream-latency-policy -o jsonpath='{.status.conditions}')"
	wait_for 20 translated gateway-httproute-condition-status-policy True Translated || fail "condition-status policy"
	wait_for 20 translated gateway-httproute-info-policy False NotTranslatable || fail "info policy (dropIf)"
	kubectl get metricpolicy gateway-httproute-info-policy \
		-o jsonpath='{.status.conditions[?(@.type=="Translated")].message}' | grep -q 'kube-state-metrics=monitoring/mm-ksm: NotTranslatable: dropIf' ||
		fail "info policy message names neither the target nor the reason"
}

t_cli_kubeconfig() {
	# the command line reads the same cluster: the same configuration
	"$M" translate --kubeconfig "$KUBECONFIG" -t kube-state-metrics -o "$T/cli-ksm.yml" \
		2>"$T/cli.txt" || fail "translate --kubeconfig: $(cat "$T/cli.txt")"
	kubectl get configmap -n monitoring mm-ksm -o jsonpath='{.data.custom-resource-state\.yaml}' >"$T/cm-ksm.yml"
	cmp -s "$T/cli-ksm.yml" "$T/cm-ksm.yml" || fail "translate --kubeconfig differs: $(diff "$T/cli-ksm.yml" "$T/cm-ksm.yml" | head)"
	grep -q '^gateway-httproute-info-policy: kube-state-metrics: NotTranslatable: dropIf' "$T/cli.txt" ||
		fail "report: $(cat "$T/cli.txt")"
}

t_no_rewrite_without_change() {
	local before
	before=$(writes)
	# an unrelated object changes: every replica reloads, nothing to write
	printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: unrelated}\n' | kubectl apply -f - >/dev/null
	sleep 3 # negative check: nothing may happen in this window
	[ "$(writes)" -eq "$before" ] || fail "rewrote unchanged translations"
	# the leader changes: the new one finds the cluster up to date
	local h
	h=$(kubectl get lease -n milometer milometer-controller -o jsonpath='{.spec.holderIdentity}')
	eval "kill \$PID_$h"
	wait_for 40 bash -c "[ \"\$(kubectl get lease -n milometer milometer-controller -o jsonpath='{.spec.holderIdentity}')\" != $h ]" ||
		fail "no new leader"
	sleep 3
	[ "$(writes)" -eq "$before" ] || fail "the new leader rewrote unchanged translations"
}

t_policy_change_rewrites() {
	local before
	before=$(writes)
	kubectl patch metricpolicy gateway-httproute-upstream-latency-policy --type merge \
		-p '{"spec":{"source":{"dataPlane":{"transform":{"value":{"cel":"value / 100.0"}}}}}}' >/dev/null ||
		fail "patch policy"
	wait_for 20 same_as_cli || fail "translations not updated after the policy changed"
	grep -q 'scale_metric(0.01)' "$T/exp-otel.yml" || fail "the change is not in the expected config"
	wait_for 10 bash -c "[ \$(($(writes) - before)) -ge 2 ]" 2>/dev/null || true
	local d=$(($(writes) - before))
	# the rules and the Collector config changed; the KSM config did not
	[ "$d" -eq 2 ] || fail "$d writes after one DataPlane policy change (want 2)"
}

run_tests t_objects_written t_translated_conditions t_cli_kubeconfig t_no_rewrite_without_change t_policy_change_rewrites
