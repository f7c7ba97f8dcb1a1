#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `milometer check --kubeconfig`: CEL paths into a custom subject kind are
# held to the openAPIV3Schema of the CustomResourceDefinition installed in
# the cluster (applied with a real kubectl to the test API server); a CRD in
# the manifests wins; a removed CRD leaves the paths unchecked with a
# warning; an unreachable or forbidding server is an error naming the URL
# and the fix; --from-cluster checks the objects in the cluster.
. "$(dirname "$0")/lib.sh"
M="$ROOT/bin/milometer"
[ -x "$M" ] || fail "build bin/milometer first"
command -v kubectl >/dev/null || fail "kubectl is not installed"
start_apiserver

# crd FILE FIELD: the Widget CRD whose spec has one string field FIELD
crd() {
	cat >"$1" <<EOC
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: false
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {old: {type: string}}}
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              $2: {type: string}
EOC
}

# policy DIR EXPR: a MetricDefinition and a MetricPolicy over Widget
policy() {
	mkdir -p "$1"
	cat >"$1/contract.yaml" <<EOC
apiVersion: telemetry.miloapis.com/v1alpha1
kind: MetricDefinition
metadata: {name: widget-info}
spec:
  resource: {group: example.com, kind: Widget}
  metric:
    name: example.com.widget.info
    instrument: {type: Gauge, unit: "1"}
  labels: [{key: size}]
---
apiVersion: telemetry.miloapis.com/v1alpha1
kind: MetricPolicy
metadata: {name: widget-info}
spec:
  subject: {group: example.com, kind: Widget}
  targetMetric: {name: example.com.widget.info}
  source:
    type: ResourceFields
    resourceFields:
      seriesFrom:
        path: resource
        value: {cel: "1"}
        labels: {size: "$2"}
EOC
}

crd "$T/crd.yaml" size
kubectl apply -f "$T/crd.yaml" >"$T/apply.out" 2>&1 || fail "kubectl apply the CRD: $(cat "$T/apply.out")"
kubectl get customresourcedefinitions widgets.example.com >"$T/get.out" 2>&1 ||
	fail "the CRD is not in the cluster after kubectl apply: $(cat "$T/get.out")"

# chk NAME ARGS...: run check, output in $T/NAME.out, exit status in $T/NAME.rc
chk() {
	local n=$1
	shift
	"$M" check "$@" >"$T/$n.out" 2>&1
	echo $? >"$T/$n.rc"
}
rc_is() { [ "$(cat "$T/$1.rc")" = "$2" ] || { cat "$T/$1.out"; echo "  exit $(cat "$T/$1.rc"), expected $2"; return 1; }; }
says() { grep -qF -- "$2" "$T/$1.out" || { cat "$T/$1.out"; echo "  no \"$2\" in the output"; return 1; }; }

t_typo_against_installed_crd() {
	policy "$T/typo" resource.spec.sise
	chk typo --kubeconfig "$KUBECONFIG" --manifests "$T/typo"
	rc_is typo 1 &&
		says typo '`resource.spec.sise`: Widget (its CRD'"'"'s schema) has no field sise in `resource.spec` (did you mean `resource.spec.size`?)' &&
		says typo "InvalidCEL" || return 1
	# without the cluster the same policy passes with a warning: the test
	# above fails because the installed CRD was read
	chk typo-offline --manifests "$T/typo"
	rc_is typo-offline 0 && says typo-offline "the schema of subject example.com/Widget is unknown here"
}

t_correct_path_passes_and_says_the_schema() {
	policy "$T/good" resource.spec.size
	chk good --kubeconfig "$KUBECONFIG" --manifests "$T/good" -v
	rc_is good 0 &&
		says good "0 rejected, 0 manifest error(s), 0 warning(s)" &&
		says good "schemas: " &&
		says good "CustomResourceDefinition(s) installed in the cluster https://127.0.0.1:$API_PORT" &&
		says good "subject example.com/Widget: the openAPIV3Schema of CustomResourceDefinition widgets.example.com version v1 (installed in the cluster https://127.0.0.1:$API_PORT)" || return 1
	# --cluster: the cluster found as the agent finds it ($KUBECONFIG here)
	chk env --cluster --manifests "$T/good" -v
	rc_is env 0 && says env "installed in the cluster https://127.0.0.1:$API_PORT" || return 1
	# the served version's schema, not a version the server does not serve
	policy "$T/old" resource.spec.old
	chk old --kubeconfig "$KUBECONFIG" --manifests "$T/old"
	rc_is old 1 && says old "has no field old in \`resource.spec\`"
}

# what check costs the API server: one read-only list of the CRDs
t_one_list_request() {
	local before after
	policy "$T/once" resource.spec.size
	before=$(requests | grep -c ' milometer-check/')
	chk once --kubeconfig "$KUBECONFIG" --manifests "$T/once"
	rc_is once 0 || return 1
	requests | grep ' milometer-check/' | tail -n +$((before + 1)) >"$T/once.req"
	after=$(wc -l <"$T/once.req")
	[ "$after" = 1 ] && grep -q '^GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions?limit=500 200 ' "$T/once.req" ||
		{ cat "$T/once.req"; echo "  want one GET of the CRD list"; return 1; }
}

t_manifest_crd_wins() {
	# the manifests' CRD names the field colour; the installed one size
	policy "$T/win" resource.spec.colour
	crd "$T/win/crd.yaml" colour
	chk win --kubeconfig "$KUBECONFIG" --manifests "$T/win" -v
	rc_is win 0 && says win "version v1 ($T/win/crd.yaml:1)"
}

t_unreachable_server() {
	local port
	port=$(free_port)
	sed "s#https://127.0.0.1:$API_PORT#https://127.0.0.1:$port#" "$KUBECONFIG" >"$T/down.kubeconfig"
	policy "$T/down" resource.spec.size
	chk down --kubeconfig "$T/down.kubeconfig" --manifests "$T/down"
	rc_is down 2 &&
		says down "cannot reach the Kubernetes API server https://127.0.0.1:$port (the server of $T/down.kubeconfig)" &&
		says down "drop --kubeconfig/--cluster to check against the manifests alone"
}

t_forbidden_crd_list() {
	ctl /ctl/deny '{"user": "admin", "verb": "list", "group": "apiextensions.k8s.io", "resource": "customresourcedefinitions"}' >/dev/null
	policy "$T/deny" resource.spec.size
	chk deny --kubeconfig "$KUBECONFIG" --manifests "$T/deny"
	rc_is deny 2 && says deny "forbids listing customresourcedefinitions.apiextensions.k8s.io (403 Forbidden)"
}

t_from_cluster_objects() {
	policy "$T/fc" resource.spec.sise
	kubectl apply -f "$T/fc/contract.yaml" >"$T/fc.apply" 2>&1 || { cat "$T/fc.apply"; return 1; }
	chk fc --from-cluster --kubeconfig "$KUBECONFIG"
	rc_is fc 1 && says fc "MetricPolicy widget-info" && says fc "(did you mean \`resource.spec.size\`?)"
	kubectl delete -f "$T/fc/contract.yaml" >/dev/null 2>&1
}

t_crd_removed() {
	kubectl delete customresourcedefinitions widgets.example.com >"$T/del.out" 2>&1 || { cat "$T/del.out"; return 1; }
	policy "$T/gone" resource.spec.sise
	chk gone --kubeconfig "$KUBECONFIG" --manifests "$T/gone" -v
	rc_is gone 0 &&
		says gone "the schema of subject example.com/Widget is unknown here, so paths into resource are not checked (no CustomResourceDefinition of it in the manifests and none installed in the cluster" &&
		says gone "subject example.com/Widget: none: no CustomResourceDefinition of example.com/Widget in the manifests or the cluster"
}

run_tests t_typo_against_installed_crd t_correct_path_passes_and_says_the_schema \
	t_one_list_request t_manifest_crd_wins t_unreachable_server t_from_cluster_objects \
	t_crd_removed t_forbidden_crd_list
