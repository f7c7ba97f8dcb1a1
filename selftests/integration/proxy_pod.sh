# SPDX-License-Identifier: Apache-2.0
# Sourced by integration tests after lib.sh and k8s_api.sh: proxy pods of a
# node as the agent finds them in a cluster — a Pod object in the test API
# server (gateway-name label, uid, Burstable QoS, a containerd container
# id) and the real cgroup v2 directories the systemd driver + containerd
# would make for it, with the proxy's processes moved in. The EXIT trap
# moves them back and removes the directories before lib.sh's cleanup.
CG_ROOT=/sys/fs/cgroup/unified
[ -f "$CG_ROOT/cgroup.controllers" ] || CG_ROOT=/sys/fs/cgroup
[ -f "$CG_ROOT/cgroup.controllers" ] || fail "no cgroup v2 mount here"
NODE=mm-it-node
CG_DIRS=()

pod_cg_cleanup() {
	local d p i
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
# set +e: a failing step must not skip lib.sh's cleanup
trap 'rc=$?; set +e; pod_cg_cleanup; (exit $rc); cleanup' EXIT

# proxy_pod NAME GATEWAY PID...: a pod of GATEWAY (namespace infra) on this
# node; its container's cgroup in $POD_CG; PIDs moved into it
proxy_pod() {
	local name=$1 gw=$2 cid uid d p
	shift 2
	cid=$(head -c 32 /dev/urandom | sha256sum | cut -c1-64)
	cat <<EOP | kc apply -f - >/dev/null || fail "kubectl apply of pod $name"
apiVersion: v1
kind: Pod
metadata:
  name: $name
  namespace: infra
  labels: {gateway.networking.k8s.io/gateway-name: $gw}
spec:
  nodeName: $NODE
  containers: [{name: proxy, image: proxy}]
EOP
	uid=$(kc -n infra get pod "$name" -o jsonpath='{.metadata.uid}')
	[ -n "$uid" ] || fail "pod $name has no uid"
	kc_status_merge "/api/v1/namespaces/infra/pods/$name/status" \
		"{\"status\":{\"phase\":\"Running\",\"qosClass\":\"Burstable\",\"containerStatuses\":[{\"name\":\"proxy\",\"containerID\":\"containerd://$cid\"}]}}" \
		>/dev/null || fail "kubectl patch of pod $name's status"
	# the systemd driver's layout: pod UID dashes become underscores
	for d in kubepods.slice kubepods.slice/kubepods-burstable.slice \
		"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid//-/_}.slice" \
		"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid//-/_}.slice/cri-containerd-$cid.scope"; do
		[ -d "$CG_ROOT/$d" ] || { mkdir "$CG_ROOT/$d" || fail "mkdir $CG_ROOT/$d"; CG_DIRS+=("$CG_ROOT/$d"); }
	done
	POD_CG="$CG_ROOT/$d"
	for p in "$@"; do
		echo "$p" >"$POD_CG/cgroup.procs" || fail "cannot move $p into $POD_CG"
	done
	log "pod $name (Gateway $gw): $* in $POD_CG"
}
