#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# pod_sandbox.sh ROOTFS RUN_DIR CONFIG_DIR ARGS...: run the image's
# /usr/bin/milometer ARGS the way deploy/kubernetes/daemonset.yaml runs it,
# without a container runtime: chrooted into the unpacked image ROOTFS made
# read-only, procfs of the host PID namespace (hostPID), sysfs read-only, the
# three hostPath volumes (/sys/fs/bpf read-write, /sys/kernel/tracing and the
# host's /sys/fs/cgroup at /host/sys/fs/cgroup read-only), RUN_DIR as the
# /run/milometer emptyDir and CONFIG_DIR as /etc/milometer (read-only), uid
# 0 with the bounding set cut to CAP_BPF + CAP_PERFMON (or $SANDBOX_CAPS,
# space-separated) and no_new_privs.
# Call it inside a private mount namespace (agent_ns.sh); it execs the agent.
set -euo pipefail
R=$1 RUN=$2 CFG=$3
shift 3
mkdir -p "$R/proc" "$R/sys" "$R/dev" "$R/host/sys/fs/cgroup" "$R/etc/milometer" \
	"$R/run/milometer"
mount --bind "$R" "$R"
mount -t proc proc "$R/proc"
mount -t sysfs -o ro sysfs "$R/sys"
ro_bind() { mount --bind "$1" "$2" && mount -o remount,bind,ro "$2"; }
mount --bind /sys/fs/bpf "$R/sys/fs/bpf"
# A node's systemd mounts tracefs (sys-kernel-tracing.mount), and the pod's
# hostPath shows it; a machine without it (a fresh CI VM) gets one here, in
# this private mount namespace, as that node would have.
[ "$(stat -f -c %T /sys/kernel/tracing 2>/dev/null)" = tracefs ] ||
	mount -t tracefs tracefs /sys/kernel/tracing
ro_bind /sys/kernel/tracing "$R/sys/kernel/tracing"
mount --rbind /sys/fs/cgroup "$R/host/sys/fs/cgroup"
mount -o remount,bind,ro "$R/host/sys/fs/cgroup"
mount -t tmpfs -o mode=755,size=64k tmpfs "$R/dev"
for d in null zero urandom random; do
	touch "$R/dev/$d"
	mount --bind "/dev/$d" "$R/dev/$d"
done
mount --bind "$RUN" "$R/run/milometer"
ro_bind "$CFG" "$R/etc/milometer"
mount -o remount,bind,ro "$R"
all=$(capsh --print | sed -n 's/^Bounding set =//p')
keep=(${SANDBOX_CAPS:-cap_bpf cap_perfmon})
drop=$(tr ',' '\n' <<<"$all" | grep -v -x -F "${keep[@]/#/-e}" | paste -sd,)
exec capsh --chroot="$R" --drop="$drop" --no-new-privs \
	--shell=/usr/bin/milometer -- "$@"
