#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Pod -> cgroup id on REAL cgroup v2 directories: the kubelet's tree shapes
# (systemd and cgroupfs drivers, Burstable and Guaranteed, containerd and
# CRI-O) are made under the host's cgroup2 mount, with sibling containers
# and another pod as decoys. A process is moved into each container's
# cgroup by this script (the ground truth), then resolves the pod with
# pod_cgroup__find() and compares the id with what a BPF program running in
# that process sees (bpf_get_current_cgroup_id) and with the directory's
# inode. A wrong directory or a wrong id method fails.
. "$(dirname "$0")/lib.sh"
need_root
need_bin cgroup_id_probe

if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
	CG2=/sys/fs/cgroup
elif [ "$(stat -f -c %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then
	CG2=/sys/fs/cgroup/unified
else
	fail "no cgroup2 mount at /sys/fs/cgroup or /sys/fs/cgroup/unified"
fi
# a private --cgroup-root so concurrent runs and the host's own tree
# are untouched
ROOT=$CG2/mm-it-podcg-$$
UID1=3f1c2a9e-8b7d-4c6e-9a5f-0123456789ab
UID1_=${UID1//-/_}
UID2=aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee
C1=$(printf 'a%.0s' {1..63})1
C2=$(printf 'b%.0s' {1..63})2

rmcg() {
	# leaves first; a cgroup with a process in it cannot go
	[ -d "$ROOT" ] && find "$ROOT" -depth -type d -exec rmdir {} \; 2>/dev/null
	[ ! -d "$ROOT" ] || log "could not remove $ROOT"
}
trap 'rc=$?; set +e; rmcg; (exit $rc); cleanup' EXIT

# check REL QOS CID: move a shell into ROOT/REL, exec the probe there
check() {
	local rel=$1 qos=$2 cid=$3 out
	out=$(sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" "$3" "$4" "$5" "$6"' \
		sh "$ROOT/$rel" "$BIN/cgroup_id_probe" "$ROOT" "$UID1" "$qos" "$cid") ||
		fail "$rel: probe: $out"
	log "$out"
	case "$out" in
	*" dir=$ROOT/$rel") ;;
	*) fail "$rel: pod_cgroup__find picked another directory: $out" ;;
	esac
}

mk() { mkdir -p "$ROOT/$1"; }

# systemd driver, Burstable, containerd; the pod's other container and
# another pod's container next to it
POD=kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod$UID1_.slice
mk "$POD/cri-containerd-$C1.scope"
mk "$POD/cri-containerd-$C2.scope"
mk "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID2//-/_}.slice/cri-containerd-$C1.scope"
check "$POD/cri-containerd-$C1.scope" Burstable "containerd://$C1"
check "$POD/cri-containerd-$C2.scope" Burstable "containerd://$C2"

# systemd driver, Guaranteed (no QoS level), CRI-O with its conmon sibling
GPOD=kubepods.slice/kubepods-pod$UID1_.slice
mk "$GPOD/crio-conmon-$C1.scope"
mk "$GPOD/crio-$C1.scope"
check "$GPOD/crio-$C1.scope" Guaranteed "cri-o://$C1"

# cgroupfs driver, BestEffort, containerd
mk "kubepods/besteffort/pod$UID1/$C1"
check "kubepods/besteffort/pod$UID1/$C1" BestEffort "containerd://$C1"

# ids differ between the containers (the test would pass on a constant)
a=$(stat -c %i "$ROOT/$POD/cri-containerd-$C1.scope")
b=$(stat -c %i "$ROOT/$POD/cri-containerd-$C2.scope")
[ "$a" != "$b" ] || fail "two cgroups with one inode?"
log "pod cgroup ids agree with BPF for 4 containers in 3 path shapes"
