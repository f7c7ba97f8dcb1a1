#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
#
# Runs the README's commands as a new user would: in a Debian 12 root made
# with debootstrap (minbase plus git, make and ca-certificates, nothing
# else), as root, from a clone of this repository's HEAD.
#
#   selftests/tools/fresh_root.sh [-r ROOT] [-k] [--] [make arguments]
#   selftests/tools/fresh_root.sh -- -j2 check
#
# ROOT (default /srv/mm-fresh-root) is made from scratch unless -k keeps an
# existing one. The root shares this kernel: /proc, /sys (with its bpf,
# tracefs and cgroup mounts) and /dev are bound into its own mount
# namespace, as a node's are into a privileged pod, so anything that loads
# BPF or binds the tests' ports must not run beside it (hold
# /tmp/mm-bpf.lock around it).
# Exit status: make's.
set -euo pipefail

ROOT=/srv/mm-fresh-root
KEEP=0
SUITE=bookworm
MIRROR=${MM_DEBIAN_MIRROR:-http://deb.debian.org/debian}

usage() {
	sed -n '5,16s/^# \{0,1\}//p' "$0"
	exit "${1:-0}"
}

while [ $# -gt 0 ]; do
	case "$1" in
	-r) ROOT=$2; shift 2 ;;
	-k) KEEP=1; shift ;;
	-h|--help) usage 0 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || set -- -j2 check

SRC=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)

die() { echo "fresh_root: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (debootstrap and the mounts need it)"

if [ "$KEEP" = 0 ] || [ ! -x "$ROOT/bin/sh" ]; then
	command -v debootstrap >/dev/null ||
		apt-get install -y --no-install-recommends debootstrap >/dev/null
	rm -rf --one-file-system "$ROOT"
	debootstrap --variant=minbase --include=git,make,ca-certificates \
		"$SUITE" "$ROOT" "$MIRROR" >/dev/null ||
		die "debootstrap $SUITE into $ROOT failed (see $ROOT/debootstrap/debootstrap.log)"
fi

cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
# The root reaches the network through this machine's, so it trusts what
# this machine's administrator added (a site proxy that re-signs TLS): a
# Debian installed on that network is given the same anchors.
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
	mkdir -p "$ROOT/usr/local/share/ca-certificates"
	cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
fi

rm -rf "$ROOT/root/milometer"
git clone -q "$SRC" "$ROOT/root/milometer"
echo "fresh_root: $(git -C "$SRC" rev-parse --short HEAD) in $ROOT: make $*"

# In a mount namespace of its own, the root becomes "/" by pivot_root, not
# by chroot: it is then a mount point (buildah remounts "/"), and a mount
# namespace made inside it (the tests' agent_ns.sh) keeps it as its root
# when nsenter enters that namespace (a chroot would be left for the
# machine's root). /proc, /sys (bpffs, tracefs, cgroup) and /dev are the
# machine's, bound in; nothing mounted here outlives the namespace.
inner='
set -eu
ROOT=$1
shift
mount --bind "$ROOT" "$ROOT"
for d in proc sys dev; do
	mkdir -p "$ROOT/$d"
	mount --rbind "/$d" "$ROOT/$d"
done
mount -t tmpfs -o mode=1777 tmpfs "$ROOT/tmp"
[ -c "$ROOT/dev/null" ] || { echo "fresh_root: $ROOT/dev/null is not a character device" >&2; exit 1; }
cd "$ROOT"
mkdir -p .machine-root
pivot_root . .machine-root
cd /
umount -l /.machine-root
rmdir /.machine-root
update-ca-certificates >/dev/null
exec /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	bash -c "cd /root/milometer && make \"\$@\"" make "$@"
'
exec unshare --mount --propagation private -- bash -c "$inner" fresh_root "$ROOT" "$@"
