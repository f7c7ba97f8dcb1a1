#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# build_promtool.sh: print the path of a promtool that reads every kind of
# Prometheus configuration deploy/ ships, building it once if needed.
#
# Debian's promtool (package prometheus, 2.42) is built without the
# Kubernetes service discovery (Debian leaves client-go out), so it rejects
# any kubernetes_sd_configs ("field kubernetes_sd_configs not found"). This
# builds upstream Prometheus's own promtool, with every discovery, from the
# Go module proxy: module github.com/prometheus/prometheus $VERSION (tag
# v2.<minor>.<patch> is module v0.<minor>.<patch>), into $MM_TOOLS_CACHE
# (default /var/cache/milometer/tools), outside the repository. `go build`
# in the module's own directory, since `go install pkg@version` refuses a
# module whose go.mod has replace directives. v0.42.0 is the 2.42.0 Debian
# ships, and its go.mod asks for Go 1.18; about 5 minutes on 2 cores, once.
# Exit 2 with the reason on stderr when no Go toolchain can be found.
set -eu
VERSION=${PROMTOOL_MODULE_VERSION:-v0.42.0}
CACHE=${MM_TOOLS_CACHE:-/var/cache/milometer/tools}
OUT=$CACHE/bin/promtool-$VERSION
if [ -x "$OUT" ]; then
	echo "$OUT"
	exit 0
fi
# any Go >= 1.18 (a newer one in PATH, else the one go_toolchain.sh fetches)
GO=$("$(dirname "$0")/go_toolchain.sh" 1.18) || {
	echo "build_promtool: no Go toolchain: cannot build a promtool with Kubernetes service discovery" >&2
	exit 2
}
mkdir -p "$CACHE/bin"
# modules and build cache only for this build (GBs): the binary stays
work=$(mktemp -d "$CACHE/build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
# GOPATH too: the checksum database's client keeps its state there, and
# without it (nor HOME) every download fails
export GOPATH="$work/gopath" GOMODCACHE="$work/mod" GOCACHE="$work/cache" GOFLAGS=-mod=mod
# the module's go line is old enough for any Go here: never fetch another
export GOTOOLCHAIN=local
"$GO" mod download -json "github.com/prometheus/prometheus@$VERSION" >"$work/download.json" || true
src=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p' "$work/download.json")
[ -n "$src" ] && [ -d "$src" ] || {
	echo "build_promtool: go mod download github.com/prometheus/prometheus@$VERSION failed: $(grep '"Error"' "$work/download.json")" >&2
	exit 1
}
mkdir "$work/src"
cp -r "$src/." "$work/src/"
chmod -R u+w "$work/src"
echo "build_promtool: building promtool $VERSION with $("$GO" version) (minutes, once)" >&2
(cd "$work/src" && nice -n 10 "$GO" build -o "$OUT.tmp" ./cmd/promtool) >&2
mv "$OUT.tmp" "$OUT"
echo "$OUT"
