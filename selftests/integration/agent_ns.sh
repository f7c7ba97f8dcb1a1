#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# agent_ns.sh CMD [ARGS]...: run the agent in a private mount namespace with
# its own bpffs instance on /sys/fs/bpf. Its programs attach system-wide as
# usual, but its pins (/sys/fs/bpf/milometer) cannot clash with another
# agent on this machine (a demo, a node agent) and vanish with the
# namespace. SIGTERM and SIGHUP are passed on; after the agent exits, pins it left
# behind make the exit status 99.
if [ "${MM_IT_IN_NS:-}" != 1 ]; then
	# Under a root that is not a mount point (a chroot), unshare cannot
	# make "/" private: then the namespace's /sys is, before the bpffs
	# goes on it (a mount there must not propagate back to the host's).
	if mountpoint -q /; then
		MM_IT_IN_NS=1 exec unshare --mount --propagation private "$0" "$@"
	fi
	MM_IT_IN_NS=1 MM_IT_NS_SYS=1 exec unshare --mount --propagation unchanged "$0" "$@"
fi
if [ -n "${MM_IT_NS_SYS:-}" ] && ! mount --make-rprivate /sys; then
	echo "agent_ns: cannot make /sys private in the agent's mount namespace" >&2
	exit 98
fi
mount -t bpf bpf /sys/fs/bpf || {
	echo "agent_ns: cannot mount a private bpffs on /sys/fs/bpf" >&2
	exit 98
}
"$@" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT
# SIGHUP (reload) too: the agent re-reads its featureGates
trap 'kill -HUP "$pid" 2>/dev/null' HUP
while :; do
	wait "$pid"
	rc=$?
	kill -0 "$pid" 2>/dev/null || break
done
if [ -e /sys/fs/bpf/milometer ] && [ -n "$(ls -A /sys/fs/bpf/milometer)" ]; then
	echo "agent_ns: the agent left pins behind:" >&2
	ls /sys/fs/bpf/milometer >&2
	exit 99
fi
exit $rc
