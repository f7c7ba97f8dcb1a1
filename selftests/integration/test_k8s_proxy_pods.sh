#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# In a cluster the agent runs with no --proxy-* flag: the proxy is the pod
# of this node that a Gateway runs (label gateway.networking.k8s.io/
# gateway-name), found through the API and its container's cgroup v2 id.
# Here the gateway nginx is moved into a real cgroup shaped as the systemd
# driver + containerd lay a Burstable pod out, the Pod object (with that
# uid, QoS class and container id) lives in the test API server, and the
# counts must equal nginx's access log (the backends, in no pod, stay
# untraced: their I/O would show up as extra exchanges).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/k8s_api.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx

CG_ROOT=/sys/fs/cgroup/unified
[ -f "$CG_ROOT/cgroup.controllers" ] || CG_ROOT=/sys/fs/cgroup
[ -f "$CG_ROOT/cgroup.controllers" ] || fail "no cgroup v2 mount here"
NODE=mm-it-node
CID=$(head -c 32 /dev/urandom | sha256sum | cut -c1-64)
CG_DIRS=()

pod_cg_cleanup() {
	local d p
	for d in "${CG_DIRS[@]}"; do
		[ -d "$d" ] || continue
		for p in $(cat "$d/cgroup.procs" 2>/dev/null); do
			echo "$p" >"$CG_ROOT/cgroup.procs" 2>/dev/null
		done
	done
	for ((i = ${#CG_DIRS[@]} - 1; i >= 0; i--)); do
		rmdir "${CG_DIRS[i]}" 2>/dev/null
	done
}
trap 'rc=$?; set +e; pod_cg_cleanup; (exit $rc); cleanup' EXIT

k8s_start_api
for ns in infra apps shop; do
	printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n' $ns
	echo ---
done | kc apply -f - >/dev/null || fail "kubectl apply namespaces"
kc apply -f "$T/manifests/" >/dev/null || fail "kubectl apply of the base manifests"

cat <<EOF | kc apply -f - >/dev/null || fail "kubectl apply of the gateway pod"
apiVersion: v1
kind: Pod
metadata:
  name: gw-proxy
  namespace: infra
  labels: {gateway.networking.k8s.io/gateway-name: gw}
spec:
  nodeName: $NODE
  containers: [{name: proxy, image: nginx}]
EOF
UID1=$(kc -n infra get pod gw-proxy -o jsonpath='{.metadata.uid}')
[ -n "$UID1" ] || fail "the pod has no uid"
kc -n infra patch pod gw-proxy --subresource=status --type=merge -p \
	"{\"status\":{\"phase\":\"Running\",\"qosClass\":\"Burstable\",\"containerStatuses\":[{\"name\":\"proxy\",\"containerID\":\"containerd://$CID\"}]}}" \
	>/dev/null || fail "kubectl patch of the pod status"

# the systemd driver's layout: pod UID dashes become underscores
for d in kubepods.slice kubepods.slice/kubepods-burstable.slice \
	"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID1//-/_}.slice" \
	"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID1//-/_}.slice/cri-containerd-$CID.scope"; do
	[ -d "$CG_ROOT/$d" ] || { mkdir "$CG_ROOT/$d" || fail "mkdir $CG_ROOT/$d"; CG_DIRS+=("$CG_ROOT/$d"); }
done
CG=${CG_DIRS[${#CG_DIRS[@]} - 1]}
for p in $NGINX_PID $(nginx_workers); do
	echo "$p" >"$CG/cgroup.procs" || fail "cannot move nginx ($p) into $CG"
done
log "gateway nginx in $CG"

AGENT_SOURCE=(--kubeconfig "$T/kubeconfig")
AGENT_TARGET=(--node-name "$NODE") # no --proxy-*: the pods say
start_agent
grep -q 'k8s: watching' "$T/agent.out" || fail "the agent did not use the API"
found() { grep -q '1 proxy pods on this node, 1 containers traced' "$T/agent.out"; }
wait_for 20 found || fail "the agent did not find the proxy pod's container: $(tail -5 "$T/agent.out")"

hey -n 300 -c 4 -host api.example.com "http://127.0.0.1:$PROXY_PORT/v1/status" >/dev/null
hey -n 200 -c 4 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/cart/1" >/dev/null
compare_log --expect-total 500
