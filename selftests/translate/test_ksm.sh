#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The kube-state-metrics target against a real kube-state-metrics (built
# from its Go module by selftests/tools/build-ksm.sh) and the stand-in API
# server: KSM running the CustomResourceState configuration that
# `milometer translate` generated serves, after the labeldrop the header
# asks for, exactly the ResourceFields series `milometer controller`
# serves for the same objects (names, labels, values, both ways).
. "$(dirname "$0")/../k8s/lib.sh"
npass=0
nfail=0
ok() { echo "ok   $*"; npass=$((npass + 1)); }
bad() { echo "FAIL $*"; nfail=$((nfail + 1)); }
finish() { echo "$npass passed, $nfail failed"; [ $nfail -eq 0 ]; exit; }
M="$ROOT/bin/milometer"
if ! KSM=$("$ROOT/selftests/tools/build-ksm.sh" 2>"$T/build.log"); then
	bad "kube-state-metrics could not be built: $(tail -3 "$T/build.log")"
	finish
fi
start_apiserver
EX="$ROOT/deploy/examples/contract"
mkdir -p "$T/m"
cp "$EX"/seed-scenario-condition-status-*.yaml "$EX"/extra-httproute-created-*.yaml \
	"$EX"/extra-httproute-deleted-*.yaml "$T/m/"
kubectl apply -f "$T/m" >/dev/null || fail "kubectl apply contract"
cond() { printf '{"type":"%s","status":"%s","reason":"%s","message":"","lastTransitionTime":"2026-01-02T03:04:05Z"}' "$@"; }
route() { # NS NAME CREATED CONDITIONS [DELETION]
	printf '{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"%s","namespace":"%s","creationTimestamp":"%s"%s},"spec":{"parentRefs":[{"name":"gw"}]},"status":{"parents":[{"parentRef":{"name":"gw"},"controllerName":"x/y","conditions":[%s]}],"conditions":[%s]}}' \
		"$2" "$1" "$3" "${5:+,\"deletionTimestamp\":\"$5\"}" "$4" "$4"
}
put_objects "$(ns_obj apps)" "$(ns_obj shop)" "$(ns_obj milometer)" \
	"$(route apps api 2026-03-01T10:00:00Z "$(cond Accepted True Accepted),$(cond ResolvedRefs False BackendNotFound)")" \
	"$(route apps web 2026-03-02T11:30:00Z "$(cond Accepted Unknown Pending)" 2026-03-05T00:00:00Z)" \
	"$(route shop cart 2026-03-03T12:00:07Z "$(cond Accepted True Accepted)")"
kubectl get httproutes -A -o yaml >"$T/m/routes.yaml" || fail "kubectl get httproutes"
if "$M" translate -m "$T/m" -t kube-state-metrics --strict -o "$T/ksm.yml" 2>"$T/report.txt"; then
	ok "translate --target kube-state-metrics: every ResourceFields policy"
else
	bad "translate: $(cat "$T/report.txt")"
fi
CP=$(free_port)
"$M" controller --kubeconfig "$KUBECONFIG" --identity c1 --leader-elect-namespace milometer \
	--prometheus-listen "127.0.0.1:$CP" >"$T/controller.log" 2>&1 &
PIDS+=($!)
KP=$(free_port)
KT=$(free_port)
"$KSM" --kubeconfig "$KUBECONFIG" --custom-resource-state-only \
	--custom-resource-state-config-file "$T/ksm.yml" --host 127.0.0.1 --port "$KP" \
	--telemetry-host 127.0.0.1 --telemetry-port "$KT" >"$T/ksm.log" 2>&1 &
PIDS+=($!)
names=$(sed -n 's/^    - name: //p' "$T/ksm.yml" | paste -sd,)
[ -n "$names" ] && ok "generated config names $names" || bad "no metric in $T/ksm.yml"
same() {
	$PY "$ROOT/selftests/translate/promdiff.py" --a "http://127.0.0.1:$KP/metrics" \
		--b "http://127.0.0.1:$CP/metrics" --names "$names" \
		--drop-labels 'customresource_(group|version|kind)' --min 7 >"$T/diff.txt" 2>&1
}
if wait_for 60 same; then
	ok "kube-state-metrics series == controller's ResourceFields series ($(tail -1 "$T/diff.txt"))"
else
	bad "kube-state-metrics differs from the controller: $(cat "$T/diff.txt"); ksm: $(tail -5 "$T/ksm.log")"
fi
# the check is shown to fire: a mapping broken on purpose
sed 's/valueFrom: \["status"\]/valueFrom: ["reason"]/' "$T/ksm.yml" >"$T/ksm-bad.yml"
KP2=$(free_port)
KT2=$(free_port)
"$KSM" --kubeconfig "$KUBECONFIG" --custom-resource-state-only \
	--custom-resource-state-config-file "$T/ksm-bad.yml" --host 127.0.0.1 --port "$KP2" \
	--telemetry-host 127.0.0.1 --telemetry-port "$KT2" >"$T/ksm-bad.log" 2>&1 &
PIDS+=($!)
served() { curl -fsS "http://127.0.0.1:$KP2/metrics" 2>/dev/null | grep -q '^gateway_networking_k8s_io_httproute_created_seconds{'; }
wait_for 60 served || bad "the broken config's KSM served nothing"
if $PY "$ROOT/selftests/translate/promdiff.py" --a "http://127.0.0.1:$KP2/metrics" \
	--b "http://127.0.0.1:$CP/metrics" --names "$names" \
	--drop-labels 'customresource_(group|version|kind)' >/dev/null 2>&1; then
	bad "a broken value mapping went unnoticed"
else
	ok "a broken value mapping is caught"
fi
finish
