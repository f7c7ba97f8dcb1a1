#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# deploy/kubernetes as `kubectl apply -k` would send it: kubectl's own
# kustomize renders it, k8s_manifests.py checks objects, references,
# security properties, RBAC and CRD structure offline (no API server is
# available here: `kubectl apply --dry-run=client` needs discovery), the
# agent's own config parser accepts the ConfigMap's milometer.yaml, and
# every security check is shown to fire on a render broken on purpose.
# Needs no root and loads no BPF.
. "$(dirname "$0")/lib.sh"
command -v kubectl >/dev/null || fail "kubectl missing (deploy/install-deps.sh installs Debian's kubernetes-client)"
need_bin milometer
K=$ROOT/deploy/kubernetes
CHECK="$PY $IT_DIR/k8s_manifests.py"

kubectl kustomize "$K" >"$T/render.yaml" || fail "kubectl kustomize $K failed"
$CHECK --optional "$K"/optional/*.yaml <"$T/render.yaml" || fail "the render has problems (above)"
log "$(grep -c '^kind:' "$T/render.yaml") objects render"

# the agent's config, through the agent's own (strict) parser
$PY - "$T/render.yaml" "$T/milometer.yaml" <<'EOF'
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "ConfigMap" and "milometer.yaml" in d.get("data", {}):
        open(sys.argv[2], "w").write(d["data"]["milometer.yaml"])
EOF
[ -s "$T/milometer.yaml" ] || fail "no milometer.yaml ConfigMap in the render"
"$BIN/milometer" run --config "$T/milometer.yaml" --help >/dev/null ||
	fail "the agent rejects the ConfigMap's milometer.yaml"

# broken <name> <python transforming doc d> <expected message>: the check
# must fail on the render with that change
broken() {
	local name=$1 code=$2 want=$3 out
	$PY - "$T/render.yaml" "$T/$name.yaml" "$code" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
for d in docs:
    k = d["kind"]
    exec(sys.argv[3])
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))
EOF
	if out=$($CHECK <"$T/$name.yaml"); then
		fail "$name: the check passed a broken render"
	fi
	grep -q -- "$want" <<<"$out" || fail "$name: failed without '$want': $out"
	log "$name: caught"
}
AG='k == "DaemonSet" and'
broken privileged "if $AG True: d['spec']['template']['spec']['containers'][0]['securityContext']['privileged'] = True" "is privileged"
broken sys_admin "if $AG True: d['spec']['template']['spec']['containers'][0]['securityContext']['capabilities']['add'].append('SYS_ADMIN')" "want exactly"
broken rw_root "if $AG True: d['spec']['template']['spec']['containers'][0]['securityContext']['readOnlyRootFilesystem'] = False" "readOnlyRootFilesystem"
broken host_root "if $AG True: d['spec']['template']['spec']['volumes'].append({'name': 'root', 'hostPath': {'path': '/'}}); d['spec']['template']['spec']['containers'][0]['volumeMounts'].append({'name': 'root', 'mountPath': '/host'})" "is not one the agent uses"
broken rw_cgroup "if $AG True: [m.pop('readOnly') for m in d['spec']['template']['spec']['containers'][0]['volumeMounts'] if m['name'] == 'host-cgroup']" "mounted read-write"
broken node_name "if $AG True: d['spec']['template']['spec']['containers'][0]['env'] = []" "NODE_NAME"
broken agent_writes "if k == 'ClusterRole' and d['metadata']['name'] == 'milometer-agent': d['rules'][1]['verbs'].append('patch')" "agent role"
broken agent_status "if k == 'ClusterRole' and d['metadata']['name'] == 'milometer-agent': d['rules'].append({'apiGroups': ['telemetry.miloapis.com'], 'resources': ['metricpolicies/status'], 'verbs': ['get']})" "subresource"
broken ctl_writes "if k == 'ClusterRole' and d['metadata']['name'] == 'milometer-controller-read': d['rules'][1]['verbs'].append('update')" "controller write grants"
broken translate_any "if k == 'Role' and d['metadata']['name'] == 'milometer-controller-translate': d['rules'][0].pop('resourceNames')" "without resourceNames"
broken translate_update "if k == 'Role' and d['metadata']['name'] == 'milometer-controller-translate': d['rules'][1]['verbs'].append('update')" "controller write grants"
broken secrets "if k == 'ClusterRole' and d['metadata']['name'] == 'milometer-controller-read': d['rules'].append({'apiGroups': [''], 'resources': ['secrets'], 'verbs': ['get']})" "reads secrets"
broken unbounded "if k == 'CustomResourceDefinition' and d['metadata']['name'].startswith('metricdefinitions'): d['spec']['versions'][0]['schema']['openAPIV3Schema']['properties']['spec']['properties']['labels'].pop('maxItems')" "unbounded list"
broken map_keys "if k == 'CustomResourceDefinition' and d['metadata']['name'].startswith('metricpolicies'): d['spec']['versions'][0]['schema']['openAPIV3Schema']['properties']['spec']['properties']['source']['properties']['resourceFields']['properties']['staticLabels']['x-kubernetes-validations'] = [{'rule': \"self.all(k, k.matches('^a'))\", 'message': 'm'}]" "over map keys"
broken selector "if k == 'Service': d['spec']['selector']['app.kubernetes.io/component'] = 'nothing'" "selects 0 workloads"
broken replicas "if k == 'Deployment': d['spec']['replicas'] = 1" "replicas"
broken ctl_readiness "if k == 'Deployment': d['spec']['template']['spec']['containers'][0].pop('readinessProbe')" "Deployment/milometer-controller: no readinessProbe"
broken agent_liveness "if $AG True: d['spec']['template']['spec']['containers'][0]['livenessProbe']['httpGet']['port'] = 'http'" "livenessProbe port 'http' is not a container port"
log "manifests render, pass the offline checks, and every check fires on its breakage"
