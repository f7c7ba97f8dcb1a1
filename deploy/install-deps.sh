#!/bin/sh
# Install the Debian 12 packages milometer needs, only those missing.
#   install-deps.sh              build + demo + test packages (make check)
#   install-deps.sh --demo       build + what `make demo` runs
#   install-deps.sh --build-only packages the build needs
#   install-deps.sh --cross ARCH the cross build for ARCH (arm64): binutils,
#                                the tools that make and boot an ARCH root,
#                                then that root (deploy/cross-root.sh)
# As root it runs apt-get; otherwise it names what is missing and fails.
set -eu
# clang alone builds everything (it provides cc); gcc is for the tests'
# second-compiler build.
build="clang clang-format llvm make pkg-config bpftool libbpf-dev libelf-dev zlib1g-dev
libyaml-dev libcurl4-openssl-dev libprotobuf-c-dev protobuf-c-compiler
libmicrohttpd-dev uuid-dev libjson-c-dev libssl-dev libnghttp2-dev libcapstone-dev libre2-dev"
demo="nginx-light curl wrk python3 ca-certificates"
test="gcc libclang-rt-14-dev haproxy hey prometheus protobuf-compiler iproute2
qemu-system-x86 busybox-static
procps psmisc python3-prometheus-client openssl android-libboringssl
python3-kubernetes python3-yaml python3-grpcio chromium apache2 h2o
nghttp2-client nghttp2-server nghttp2-proxy caddy binutils buildah libre2-9 libcap2-bin tmux
victoria-metrics"
# Debian 12's kubectl is kubernetes-client (1.20); a newer kubectl already
# installed (another repository) is the one the tests use.
command -v kubectl >/dev/null 2>&1 || test="$test kubernetes-client"
cross=
case "${1:-}" in
--build-only) want=$build ;;
--demo) want="$build $demo" ;;
--cross)
	cross=${2:?usage: install-deps.sh --cross ARCH}
	[ "$cross" = arm64 ] || { echo "install-deps: no cross build for $cross (arm64 only)" >&2; exit 1; }
	want="binutils-aarch64-linux-gnu debootstrap qemu-user-static qemu-system-arm" ;;
"") want="$build $demo $test" ;;
*) echo "usage: install-deps.sh [--build-only|--demo|--cross ARCH]" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in *" installed") ;; *) missing="$missing $p" ;; esac
done
if [ -z "$missing" ]; then
	[ -z "$cross" ] || "$(dirname "$0")/cross-root.sh" "$cross" >/dev/null
	exit 0
fi
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
for s in nginx haproxy prometheus caddy nghttpx victoria-metrics; do
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active -q "$s" 2>/dev/null; then
		systemctl stop "$s" || true
		systemctl disable -q "$s" 2>/dev/null || true
	fi
done
[ -z "$cross" ] || "$(dirname "$0")/cross-root.sh" "$cross" >/dev/null
exit 0
