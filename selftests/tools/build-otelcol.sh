#!/bin/sh
# Build a pinned OpenTelemetry Collector (OTLP receiver; filter, transform
# and cumulativetodelta processors; OTLP/HTTP exporter) with the collector's
# own builder (ocb) from the Go module proxy, into a cache outside the work
# tree. Pinned to a release whose every module the proxy serves (newer
# contrib releases need modules it refuses). The directory's suffix changes
# with the component list, so an older build is not taken for this one.
#   build-otelcol.sh            prints the binary's path (builds it if missing)
# Env: MM_TOOLS_CACHE (default /var/cache/milometer/tools).
set -eu
ver=0.161.0
cache=${MM_TOOLS_CACHE:-/var/cache/milometer/tools}
bin=$cache/otelcol-$ver-2/milometer-otelcol
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
# a Go >= 1.26, fetched into the cache when the machine has none
go=$("$(dirname "$0")/go_toolchain.sh" 1.26) || exit 1
mkdir -p "$cache/otelcol-$ver-2"
export GOPATH=$cache/go GOBIN=$cache/go/bin GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
# the build cache beside the modules: $HOME may be unset (or another user's)
export GOCACHE=${GOCACHE:-$cache/go-build}
# the builder runs `go` itself: the same one
export PATH="$(dirname "$go"):$PATH"
"$go" install go.opentelemetry.io/collector/cmd/builder@v$ver >&2
cat >"$cache/otelcol-$ver-2/builder.yaml" <<YAML
dist:
  name: milometer-otelcol
  description: OpenTelemetry Collector for milometer's translation tests
  output_path: $cache/otelcol-$ver-2/src
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver v$ver
processors:
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/processor/filterprocessor v$ver
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/processor/transformprocessor v$ver
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/processor/cumulativetodeltaprocessor v$ver
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/otlphttpexporter v$ver
  - gomod: go.opentelemetry.io/collector/exporter/debugexporter v$ver
YAML
"$GOBIN/builder" --config "$cache/otelcol-$ver-2/builder.yaml" >&2
mv "$cache/otelcol-$ver-2/src/milometer-otelcol" "$bin"
echo "$bin"
