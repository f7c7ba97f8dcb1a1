#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lib-closure.sh BINARY [ROOT]: the shared libraries BINARY loads and its
# dynamic loader, one path per line, as the loader resolves them (symlinks
# not followed: copy with cp -L). Nothing for a static binary.
#   ROOT: BINARY is for another architecture (arm64); its libraries are
#   looked up in ROOT (deploy/cross-root.sh) by ROOT's own loader, run under
#   qemu-user. Printed paths are paths inside ROOT.
set -eu
bin=${1:?usage: lib-closure.sh BINARY [ROOT]}
root=${2:-}
interp=$(readelf -l "$bin" 2>/dev/null |
	sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
[ -n "$interp" ] || exit 0
if [ -z "$root" ]; then
	list=$(ldd "$bin")
else
	case $(readelf -h "$bin" | sed -n 's/^ *Machine: *//p') in
	AArch64) qemu=qemu-aarch64-static ;;
	*) echo "lib-closure: $bin: no qemu-user for its machine" >&2; exit 1 ;;
	esac
	command -v "$qemu" >/dev/null ||
		{ echo "lib-closure: $qemu missing: deploy/install-deps.sh --cross arm64" >&2; exit 1; }
	# the loader run by hand names itself by its path in ROOT
	list=$("$qemu" -L "$root" "$root$interp" --list "$bin" | sed "s|=> $root$interp |=> $interp |")
fi
echo "$list" | awk '/=> \// { print $3 } /^\t\/[^ ]* \(/ { print $1 }' | sort -u
