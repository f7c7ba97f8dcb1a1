#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The otelcol target in a real OpenTelemetry Collector (contrib components,
# built by the Collector's own builder: selftests/tools/build-otelcol.sh):
# the Collector runs the generated configuration over source metrics pushed
# over OTLP as the agent pushes them and exports to the project's OTLP sink;
# the decoded target points equal what the agent's own engine exports for
# the same requests (selftests/tools/translate_oracle.c, two rounds: the
# second round's cumulative totals and delta histograms). A configuration
# broken on purpose must fail the same comparison.
. "$(dirname "$0")/lib.sh"
if ! OC=$("$ROOT/selftests/tools/build-otelcol.sh" 2>"$T/build.log"); then
	bad "the OpenTelemetry Collector could not be built: $(tail -3 "$T/build.log")"
	finish
	exit 1
fi
command -v protoc >/dev/null || { bad "protoc missing (deploy/install-deps.sh)"; finish; exit 1; }
M=$T/m
mkdir -p "$M"
cp "$ROOT"/selftests/integration/manifests/base/*.yaml \
	"$ROOT"/deploy/examples/contract/seed-scenario-upstream-*.yaml \
	"$TR_DIR"/testdata/filtered.yaml "$M/"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
wait_for() { local end=$(($(date +%s) + $1)); shift; until "$@" >/dev/null 2>&1; do [ "$(date +%s)" -lt "$end" ] || return 1; sleep 0.1; done; }

(cd "$T" && "$BIN/translate_oracle" -m "$M" --route apps/api --route shop/web --route apps/wild \
	--gateway gw --otlp-out "$T/o") || bad "translate_oracle"
names=gateway.networking.k8s.io.httproute.delivery.upstream_request.latency,gateway.networking.k8s.io.httproute.delivery.upstream_request.count,gateway.networking.k8s.io.httproute.test.filtered

has_requests() { [ "$(ls "$1" | wc -l)" -ge "$2" ]; }

# run_collector NAME CONFIG-SED: a Collector on the generated config (edited
# by CONFIG-SED) and a sink; compares the sink's points with the engine's.
run_collector() {
	local name=$1 edit=$2 rp sp
	rp=$(free_port)
	mkdir -p "$T/$name/sink"
	"$BIN/otlp_sink" --port 0 --port-file "$T/$name/sink.port" --dir "$T/$name/sink" --quiet \
		>"$T/$name/sink.log" 2>&1 &
	PIDS+=($!)
	wait_for 10 test -s "$T/$name/sink.port" || return 1
	sp=$(cat "$T/$name/sink.port")
	"$BIN/milometer" translate -m "$M" -t otelcol --strict \
		--otelcol-receiver "127.0.0.1:$rp" --otelcol-exporter "http://127.0.0.1:$sp" \
		-o "$T/$name/otel.yml" 2>"$T/$name/report.txt" || return 1
	sed -i "$edit" "$T/$name/otel.yml"
	# several Collectors at once: no self-metrics port each
	printf '  telemetry:\n    metrics:\n      level: none\n' >>"$T/$name/otel.yml"
	"$OC" validate --config "$T/$name/otel.yml" >"$T/$name/validate.txt" 2>&1 || return 1
	"$OC" --config "$T/$name/otel.yml" >"$T/$name/otelcol.log" 2>&1 &
	PIDS+=($!)
	wait_for 30 curl -s -o /dev/null "http://127.0.0.1:$rp/v1/metrics" || return 1
	for r in 1 2; do
		curl -fsS -H 'Content-Type: application/x-protobuf' --data-binary @"$T/o-src-$r.pb" \
			"http://127.0.0.1:$rp/v1/metrics" >/dev/null || return 1
	done
	# both exports arrive (the Collector exports each request it receives)
	wait_for 30 has_requests "$T/$name/sink" 2 || return 1
	python3 "$TR_DIR/otlpdiff.py" --names "$names" --ref "$T/o-tgt-2.pb" --min 15 \
		"$T/$name/sink"/*.pb >"$T/$name/diff.txt" 2>&1
}
if run_collector good ''; then
	ok "Collector's translated points == the engine's ($(tail -1 "$T/good/diff.txt"))"
else
	bad "Collector differs or failed: $(cat "$T/good/report.txt" "$T/good/validate.txt" "$T/good/diff.txt" 2>/dev/null | head -20; tail -5 "$T/good/otelcol.log")"
fi
if run_collector scaled 's/scale_metric(0\.001)/scale_metric(0.01)/'; then
	bad "a wrong scale went unnoticed"
else
	grep -q 'differences' "$T/scaled/diff.txt" && ok "a wrong scale is caught" ||
		bad "the broken run failed before comparing: $(tail -3 "$T/scaled/otelcol.log")"
fi
if run_collector uid '0,/"resource_uid"\], "[0-9a-f]/s//"resource_uid"], "X/'; then
	bad "a wrong uid went unnoticed"
else
	grep -q 'differences' "$T/uid/diff.txt" && ok "a wrong uid is caught" ||
		bad "the broken run failed before comparing: $(tail -3 "$T/uid/otelcol.log")"
fi
# Honest refusals: the constant term of a histogram transform.
cp "$TR_DIR"/testdata/refused.yaml "$M/"
"$BIN/milometer" translate -m "$M" -t otelcol -o "$T/partial.yml" 2>"$T/report.txt"
check "otelcol: non-affine value refused" grep -q '^t-squared-policy: otelcol: NotTranslatable: value' "$T/report.txt"
check "otelcol: computed attribute label refused" grep -q '^t-computed-label-policy: otelcol: NotTranslatable: label method' "$T/report.txt"
check "otelcol: the partial config still validates" "$OC" validate --config "$T/partial.yml"
finish
