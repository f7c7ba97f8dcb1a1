#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# deploy/kubernetes's RBAC against what the controller does. The rendered
# manifests (kubectl kustomize) are applied to the test API server, which
# decides `kubectl auth can-i --as=system:serviceaccount:...` from those
# Roles, ClusterRoles and bindings as kube-apiserver's RBAC authorizer
# does. Then the controller runs with the --translate flags controller.yaml
# documents, and every request it makes (reads, watches, status patches,
# the lease, the translations' get and apply) is allowed to its service
# account; what it never does (update, delete, list the ConfigMaps, another
# name or namespace) is not.
. "$(dirname "$0")/lib.sh"
M="$ROOT/bin/milometer"
[ -x "$M" ] || fail "build bin/milometer first"
command -v kubectl >/dev/null || fail "kubectl is not installed"
start_apiserver --deploy-kinds
SA=system:serviceaccount:milometer-system:milometer-controller
kubectl kustomize "$ROOT/deploy/kubernetes" >"$T/render.yaml" || fail "kubectl kustomize"
kubectl apply -f "$T/render.yaml" >"$T/apply.out" 2>&1 || fail "kubectl apply: $(tail -3 "$T/apply.out")"
# can VERB RESOURCE [ARGS]: kubectl's answer for the controller's account
can() { kubectl auth can-i "$@" --as="$SA" 2>/dev/null; }

t_translate_grant_exact() {
	local r v
	for r in configmaps/milometer-rules configmaps/milometer-otelcol configmaps/milometer-ksm \
		prometheusrules.monitoring.coreos.com/milometer-rules; do
		for v in get create patch; do
			[ "$(can $v $r -n milometer-system)" = yes ] || fail "$v $r: not granted"
		done
		for v in update delete; do
			[ "$(can $v $r -n milometer-system)" = no ] || fail "$v $r: granted, never used"
		done
		[ "$(can patch $r -n monitoring)" = no ] || fail "patch $r in another namespace: granted"
	done
	[ "$(can list configmaps -n milometer-system)" = no ] || fail "list configmaps: granted"
	[ "$(can patch configmaps/milometer-agent-config -n milometer-system)" = no ] ||
		fail "patch another ConfigMap (the agent's config): granted"
	[ "$(can patch prometheusrules.monitoring.coreos.com/other -n milometer-system)" = no ] ||
		fail "patch another PrometheusRule: granted"
	[ "$(can get secrets -n milometer-system)" = no ] || fail "secrets: granted"
	# the agent's account gets none of it
	[ "$(kubectl auth can-i patch configmaps/milometer-rules -n milometer-system \
		--as=system:serviceaccount:milometer-system:milometer-agent 2>/dev/null)" = no ] ||
		fail "the agent may write the translations"
}

# verb and resource of each request the controller made, as kube-apiserver
# authorizes it: VERB RESOURCE[.GROUP][/NAME] NAMESPACE SUBRESOURCE
controller_requests() {
	ctl /ctl/requests | $PY -c '
import json, sys, urllib.parse
seen = set()
for r in json.load(sys.stdin):
    if not r["ua"].startswith("milometer") or r["code"] >= 400 and r["code"] != 404:
        continue
    u = urllib.parse.urlsplit(r["path"])
    q = urllib.parse.parse_qs(u.query)
    p = u.path.strip("/").split("/")
    if p[0] == "api":
        group, p = "", p[2:]
    elif p[0] == "apis" and len(p) > 2:
        group, p = p[1], p[3:]
    else:
        continue
    ns = ""
    if len(p) >= 2 and p[0] == "namespaces" and len(p) > 2:
        ns, p = p[1], p[2:]
    res, name = p[0], p[1] if len(p) > 1 else ""
    sub = p[2] if len(p) > 2 else ""
    m = r["method"]
    verbs = {"GET": ["watch" if q.get("watch") == ["true"] or q.get("watch") == ["1"]
                     else "get" if name else "list"],
             "PATCH": ["patch"] + (["create"] if r["code"] == 201 else []),
             "PUT": ["update"], "POST": ["create"], "DELETE": ["delete"]}[m]
    for v in verbs:
        k = (v, res + ("." + group if group else "") + ("/" + name if name else ""), ns or "-", sub or "-")
        if k not in seen:
            seen.add(k)
            print(*k)'
}

t_controller_requests_granted() {
	local args=() a n=0 v r ns sub
	# the flags controller.yaml documents, in its own namespace
	while read -r a; do
		args+=("${a//\$(POD_NAMESPACE)/milometer-system}")
	done < <(sed -n 's/^ *# - \(--translate=.*\)$/\1/p' "$ROOT/deploy/kubernetes/controller.yaml")
	[ ${#args[@]} -eq 3 ] || fail "controller.yaml documents ${#args[@]} --translate flags, want 3"
	printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: demo}\n' | kubectl apply -f - >/dev/null
	kubectl apply -f "$ROOT/deploy/examples/contract" >/dev/null || fail "apply contract"
	kubectl apply -f "$ROOT/deploy/examples/contract-httproutes.yaml" >/dev/null || fail "apply routes"
	# run_tests runs this in a subshell: the controller is stopped here, and
	# names the test's kubeconfig so that the runner's leftover check sees it
	"$M" controller --kubeconfig "$KUBECONFIG" --identity c1 \
		--leader-elect-namespace milometer-system \
		--prometheus-listen "127.0.0.1:$(free_port)" "${args[@]}" >"$T/c1.log" 2>&1 &
	CTRL_PID=$!
	trap 'kill $CTRL_PID 2>/dev/null; wait $CTRL_PID 2>/dev/null' EXIT
	wait_for 30 bash -c "kubectl get prometheusrule -n milometer-system milometer-rules &&
		kubectl get configmap -n milometer-system milometer-otelcol &&
		kubectl get configmap -n milometer-system milometer-ksm" >/dev/null 2>&1 ||
		fail "translations not written: $(tail -5 "$T/c1.log")"
	controller_requests >"$T/reqs.txt"
	[ -z "${MM_SHOW_REQS:-}" ] || cat "$T/reqs.txt" >&2
	grep -q '^create prometheusrules.monitoring.coreos.com/milometer-rules milometer-system' "$T/reqs.txt" ||
		fail "no apply-create of the PrometheusRule seen: $(cat "$T/reqs.txt")"
	while read -r v r ns sub; do
		a=()
		[ "$ns" = - ] || a+=(-n "$ns")
		[ "$sub" = - ] || a+=(--subresource "$sub")
		[ "$(can "$v" "$r" "${a[@]}")" = yes ] ||
			fail "the controller did '$v $r ns=$ns sub=$sub', which deploy/kubernetes does not grant"
		n=$((n + 1))
	done <"$T/reqs.txt"
	log "$n distinct (verb, resource, namespace) the controller used, each granted"
}

run_tests t_translate_grant_exact t_controller_requests_granted
