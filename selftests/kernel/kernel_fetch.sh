#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# kernel_fetch.sh [SUITE/]PACKAGE: print the path of PACKAGE's vmlinuz,
# downloading it first when it is not cached yet.
#
# PACKAGE is a Debian kernel image package, either a metapackage
# (linux-image-cloud-amd64: the concrete linux-image-X.Y.Z-N-cloud-amd64 it
# depends on is used, so the ABI number follows Debian's point releases) or
# a concrete one. The .deb is fetched with `apt-get download` and unpacked
# with `dpkg -x`: the kernel is never installed on this machine.
# SUITE (bullseye, trixie...) or a PACKAGE for another architecture than
# this machine's (linux-image-cloud-arm64: the name's last part) is looked
# up with a private apt configuration under the cache (its own sources
# and lists): this machine's apt sources and architectures are untouched.
#
# Cache: $MM_KERNEL_CACHE (default /var/cache/milometer-kernels), one
# directory per concrete package with vmlinuz and config only (the modules
# are not needed: everything the tests use is built in, see
# docs in docs/kernel-matrix.md). Reused across runs and worktrees.
set -euo pipefail
spec=${1:?usage: kernel_fetch.sh [SUITE/]PACKAGE}
cache=${MM_KERNEL_CACHE:-/var/cache/milometer-kernels}
mirror=${MM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
meta=${spec#*/}
suite=
[ "$meta" = "$spec" ] || suite=${spec%%/*}
arch=${meta##*-}
host_arch=$(dpkg --print-architecture)
case $arch in amd64 | arm64) ;; *) arch=$host_arch ;; esac

die() {
	echo "kernel_fetch: $*" >&2
	exit 1
}

# apt: this machine's apt, or a private one for another suite/architecture
apt=()
if [ -n "$suite" ] || [ "$arch" != "$host_arch" ]; then
	: "${suite:=bookworm}"
	a=$cache/.apt/$suite-$arch
	mkdir -p "$a/lists/partial" "$a/archives/partial" ||
		die "cannot create $a (run as root or set MM_KERNEL_CACHE)"
	# kernel ABI bumps (the concrete package) come with security updates
	src=$(printf 'deb [arch=%s] %s %s main\n' "$arch" "$mirror" "$suite" \
		"$arch" "$mirror" "$suite-updates" \
		"$arch" "${mirror%/debian}/debian-security" "$suite-security")
	if [ "$src" != "$(cat "$a/sources.list" 2>/dev/null)" ]; then
		rm -rf "$a/lists"/*_* && mkdir -p "$a/lists/partial"
		printf '%s\n' "$src" >"$a/sources.list"
	fi
	: >"$a/status"
	apt=(-o "Dir::Etc::SourceList=$a/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$a/lists" -o "Dir::State::status=$a/status"
		-o "Dir::Cache=$a" -o "Dir::Cache::archives=$a/archives"
		-o "APT::Architecture=$arch" -o "APT::Architectures=$arch")
	[ -n "$(ls "$a/lists" 2>/dev/null | grep -v partial)" ] ||
		apt-get "${apt[@]}" update -q >/dev/null 2>&1 ||
		die "apt-get update for $suite/$arch ($mirror) failed"
fi

# resolve META: the concrete image package (META itself when it has a
# kernel in it, else the linux-image-* it depends on).
resolve() {
	{ apt-cache "${apt[@]}" depends "$1" 2>/dev/null || true; } |
		awk '/^ *Depends: linux-image-/ { print $2; exit }'
}

pkg=$(resolve "$meta")
if [ -z "$pkg" ] && ! apt-cache "${apt[@]}" show "$meta" >/dev/null 2>&1; then
	# an old or missing package list: refresh once
	apt-get "${apt[@]}" update -q >/dev/null 2>&1 || die "apt-get update failed"
	pkg=$(resolve "$meta")
fi
if [ -z "$pkg" ]; then
	apt-cache "${apt[@]}" show "$meta" >/dev/null 2>&1 ||
		die "no package $meta in the apt lists (apt-cache show $meta)"
	pkg=$meta # a concrete image package: no linux-image dependency
fi

dir=$cache/$pkg
if [ -s "$dir/vmlinuz" ]; then
	echo "$dir/vmlinuz"
	exit 0
fi

mkdir -p "$cache" || die "cannot create $cache (run as root or set MM_KERNEL_CACHE)"
# concurrent runs (two worktrees) download once
exec 9>"$cache/.lock"
flock 9
if [ ! -s "$dir/vmlinuz" ]; then
	tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	echo "kernel_fetch: downloading $pkg (for $meta)" >&2
	# apt's _apt sandbox cannot write into a root-owned temp dir: harmless
	(cd "$tmp" && apt-get "${apt[@]}" download -q "$pkg" >download.log 2>&1) || {
		cat "$tmp/download.log" >&2
		die "apt-get download $pkg failed"
	}
	dpkg -x "$tmp"/"$pkg"_*.deb "$tmp/x" || die "dpkg -x of $pkg failed"
	mkdir -p "$tmp/out"
	cp "$tmp"/x/boot/vmlinuz-* "$tmp/out/vmlinuz" ||
		die "$pkg has no /boot/vmlinuz-*: not a kernel image package"
	cp "$tmp"/x/boot/config-* "$tmp/out/config" 2>/dev/null || true
	echo "$pkg${suite:+ ($suite)}" >"$tmp/out/package"
	echo "$arch" >"$tmp/out/arch"
	rm -rf "$dir"
	mv "$tmp/out" "$dir"
fi
echo "$dir/vmlinuz"
