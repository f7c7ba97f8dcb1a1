#!/bin/sh
# Install the Debian 12 packages milometer needs, only those missing.
#   install-deps.sh              build + test + demo packages
#   install-deps.sh --build-only packages the build needs
# As root it runs apt-get; otherwise it names what is missing and fails.
set -eu
build="gcc clang llvm make pkg-config bpftool libbpf-dev libelf-dev zlib1g-dev
libyaml-dev libcurl4-openssl-dev libprotobuf-c-dev protobuf-c-compiler
libmicrohttpd-dev uuid-dev libjson-c-dev libssl-dev libnghttp2-dev libcapstone-dev libre2-dev libclang-rt-14-dev"
run="nginx-light haproxy wrk hey prometheus protobuf-compiler iproute2 curl
qemu-system-x86 busybox-static
procps psmisc python3 python3-prometheus-client openssl android-libboringssl
python3-kubernetes python3-yaml python3-grpcio chromium apache2 h2o
nghttp2-client nghttp2-server nghttp2-proxy caddy binutils buildah ca-certificates libre2-9 tmux"
want=$build
[ "${1:-}" = "--build-only" ] || want="$build $run"

missing=""
for p in $want; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in *" installed") ;; *) missing="$missing $p" ;; esac
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "milometer needs these Debian packages:$missing" >&2
	echo "run as root (make deps) or: apt-get install$missing" >&2
	exit 1
fi
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
# An old package list finds nothing on a fresh machine: refresh once.
if ! apt-get install -y -q --no-install-recommends $missing >/tmp/milometer-apt.log 2>&1; then
	apt-get update -q >/tmp/milometer-apt.log 2>&1
	apt-get install -y -q --no-install-recommends $missing >>/tmp/milometer-apt.log 2>&1 || {
		tail -20 /tmp/milometer-apt.log >&2
		echo "apt-get install failed; full log in /tmp/milometer-apt.log" >&2
		exit 1
	}
fi
# Debian starts these on install; tests start their own instances.
for s in nginx haproxy prometheus caddy nghttpx; do
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active -q "$s" 2>/dev/null; then
		systemctl stop "$s" || true
		systemctl disable -q "$s" 2>/dev/null || true
	fi
done
exit 0
