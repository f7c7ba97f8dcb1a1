#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# cross-root.sh ARCH: print the path of a Debian 12 root for ARCH (arm64),
# making it first when it is not cached yet. It serves twice:
#   - the sysroot of the cross build (`make ARCH=arm64`): the -dev packages
#     the agent links against, for ARCH, from Debian's archive;
#   - the source of the kernel matrix's ARCH guest files (busybox, nginx,
#     curl, wrk, bpftool and their libraries, selftests/kernel/stage.sh).
# debootstrap's first stage (--foreign) unpacks the base system on this
# machine; the second stage runs the root's own dpkg under qemu-user
# (qemu-user-static, registered with binfmt_misc for ARCH only).
#
# Cache: $MM_CROSS_CACHE (default /var/cache/milometer/roots), one
# directory per architecture, reused across runs and worktrees; delete it to
# rebuild (its package list below is stamped, a change rebuilds it).
set -euo pipefail
arch=${1:?usage: cross-root.sh ARCH}
cache=${MM_CROSS_CACHE:-/var/cache/milometer/roots}
mirror=${MM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm

die() {
	echo "cross-root: $*" >&2
	exit 1
}
case $arch in
arm64) qemu=aarch64 ;;
*) die "architecture $arch is not supported (supported: arm64)" ;;
esac

# the agent's link libraries (Makefile AGENT_LIBS) and the guest's tools
pkgs="libc6-dev libgcc-12-dev libstdc++-12-dev libbpf-dev libelf-dev zlib1g-dev
libyaml-dev libcurl4-openssl-dev libprotobuf-c-dev libmicrohttpd-dev uuid-dev
libjson-c-dev libssl-dev libnghttp2-dev libcapstone-dev libre2-dev
busybox-static nginx-light curl wrk bpftool"
stamp=$(echo "$suite $pkgs" | md5sum | cut -c1-12)
dir=$cache/$arch
if [ "$(cat "$dir/.mm-root" 2>/dev/null)" = "$stamp" ]; then
	echo "$dir"
	exit 0
fi

[ "$(id -u)" = 0 ] || die "making the $arch root needs root (debootstrap, chroot)"
for t in debootstrap "qemu-$qemu-static"; do
	command -v "$t" >/dev/null ||
		die "$t missing: deploy/install-deps.sh --cross $arch"
done
mkdir -p "$cache" || die "cannot create $cache (set MM_CROSS_CACHE)"
exec 9>"$cache/.lock.$arch"
flock 9
if [ "$(cat "$dir/.mm-root" 2>/dev/null)" = "$stamp" ]; then
	echo "$dir"
	exit 0
fi

# binfmt_misc: the second stage's chroot runs ARCH binaries through
# qemu-user. Only this one handler is registered ('F': the interpreter is
# opened now, so it need not exist inside the root).
bm=/proc/sys/fs/binfmt_misc
if [ ! -e "$bm/register" ]; then
	mount -t binfmt_misc binfmt_misc "$bm" || die "cannot mount binfmt_misc on $bm"
fi
if [ ! -e "$bm/qemu-$qemu" ]; then
	conf=/usr/lib/binfmt.d/qemu-$qemu.conf
	[ -r "$conf" ] || die "$conf missing: apt-get install qemu-user-static"
	grep -v '^#' "$conf" >"$bm/register" || die "registering $conf with binfmt_misc failed"
fi

tmp=$cache/.new.$arch
rm -rf "$tmp"
echo "cross-root: debootstrap $suite $arch into $dir (first stage)" >&2
debootstrap --foreign --arch="$arch" --variant=minbase \
	--include="$(echo $pkgs | tr ' ' ,)" "$suite" "$tmp" "$mirror" >&2 ||
	die "debootstrap first stage failed (log: $tmp/debootstrap/debootstrap.log)"
echo "cross-root: second stage under qemu-$qemu (several minutes)" >&2
chroot "$tmp" /debootstrap/debootstrap --second-stage >&2 ||
	die "second stage failed (log: $tmp/debootstrap/debootstrap.log)"
rm -rf "$tmp/var/cache/apt/archives/"*.deb
echo "$stamp" >"$tmp/.mm-root"
rm -rf "$dir"
mv "$tmp" "$dir"
echo "$dir"
