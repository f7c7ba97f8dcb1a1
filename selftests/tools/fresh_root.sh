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
# tracefs and cgroup mounts) and /dev are mounted into it, as a node's are
# into a privileged pod, so anything that loads BPF or binds the tests'
# ports must not run beside it (hold /tmp/mm-bpf.lock around it).
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

mounted() { mountpoint -q "$1"; }

unmount_all() {
	# deepest first; -l: a test may leave a process holding a file open
	local m
	for m in $(findmnt -rn -o TARGET | sort -r); do
		case "$m" in "$ROOT"|"$ROOT"/*) umount -l "$m" 2>/dev/null || true ;; esac
	done
}
trap unmount_all EXIT

if [ "$KEEP" = 0 ] || [ ! -x "$ROOT/bin/sh" ]; then
	command -v debootstrap >/dev/null ||
		apt-get install -y --no-install-recommends debootstrap >/dev/null
	unmount_all
	rm -rf --one-file-system "$ROOT"
	debootstrap --variant=minbase --include=git,make,ca-certificates \
		"$SUITE" "$ROOT" "$MIRROR" >/dev/null ||
		die "debootstrap $SUITE into $ROOT failed (see $ROOT/debootstrap/debootstrap.log)"
fi

# rbind + rslave: the host's submounts (bpffs, tracefs, cgroup, devpts)
# appear inside, and nothing unmounted inside propagates back.
for d in proc sys dev; do
	mkdir -p "$ROOT/$d"
	mounted "$ROOT/$d" && continue
	mount --rbind "/$d" "$ROOT/$d"
	mount --make-rslave "$ROOT/$d"
done
mounted "$ROOT/tmp" || mount -t tmpfs -o mode=1777 tmpfs "$ROOT/tmp"
[ -e "$ROOT/dev/null" ] && [ -c "$ROOT/dev/null" ] ||
	die "$ROOT/dev/null is not a character device: the /dev mount failed"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true

rm -rf "$ROOT/root/milometer"
git clone -q "$SRC" "$ROOT/root/milometer"
echo "fresh_root: $(git -C "$SRC" rev-parse --short HEAD) in $ROOT: make $*"
chroot "$ROOT" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" \
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	bash -c 'cd /root/milometer && make "$@"' make "$@"
