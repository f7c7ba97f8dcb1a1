#!/bin/sh
# Build a pinned kube-state-metrics from its Go module into a cache outside
# the work tree.
#   build-ksm.sh                prints the binary's path (builds it if missing)
# Env: MM_TOOLS_CACHE (default /var/cache/milometer/tools).
set -eu
ver=2.15.0
cache=${MM_TOOLS_CACHE:-/var/cache/milometer/tools}
bin=$cache/ksm-$ver/kube-state-metrics
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
# a Go >= 1.23, fetched into the cache when the machine has none
go=$("$(dirname "$0")/go_toolchain.sh" 1.23) || exit 1
mkdir -p "$cache/ksm-$ver"
export GOPATH=$cache/go GOBIN=$cache/ksm-$ver GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
# the build cache beside the modules: $HOME may be unset (or another user's)
export GOCACHE=${GOCACHE:-$cache/go-build}
# `go install m@v` asks the proxy for the module's version list (deprecation
# check), which the proxy may refuse; download the one version and build it
# inside its own module instead.
"$go" mod download k8s.io/kube-state-metrics/v2@v$ver >&2
src=$("$go" mod download -json k8s.io/kube-state-metrics/v2@v$ver | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -d "$src" ] || { echo "build-ksm.sh: module source not found after download" >&2; exit 1; }
(cd "$src" && "$go" build -o "$bin.tmp" .) >&2
mv "$bin.tmp" "$bin"
echo "$bin"
