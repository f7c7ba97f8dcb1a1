#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The agent's own OTLP push received by a real OpenTelemetry Collector
# (contrib, built by selftests/tools/build-otelcol.sh) running the
# configuration `milometer translate --target otelcol` generated, while
# nginx traffic flows. The Collector sends the translated targets to one
# sink and, through a second pipeline with no processors, the agent's push
# as it came to another: the targets computed by the Collector from the
# agent's sources equal the agent's own targets (cumulative: the last
# point; delta: the sum of every point), same names, attributes, buckets.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx otlp_sink
OC=$("$ROOT/selftests/tools/build-otelcol.sh" 2>"$T/build.log") ||
	fail "the OpenTelemetry Collector could not be built: $(tail -3 "$T/build.log")"
use_manifests base
cp "$ROOT"/deploy/examples/contract/seed-scenario-upstream-*.yaml \
	"$ROOT/selftests/translate/testdata/filtered.yaml" "$T/manifests/"
RP=$((SINK_PORT + 1))
S1=$((SINK_PORT + 2))
S2=$((SINK_PORT + 3))
port_free $RP $S1 $S2
mkdir -p "$T/translated" "$T/agent"
start_bg sink-translated "$BIN/otlp_sink" --port $S1 --dir "$T/translated" --quiet
start_bg sink-agent "$BIN/otlp_sink" --port $S2 --dir "$T/agent" --quiet
wait_for 10 listening $S1 || fail "otlp_sink did not start"
wait_for 10 listening $S2 || fail "otlp_sink did not start"
"$BIN/milometer" translate --manifests "$T/manifests" --target otelcol --strict \
	--otelcol-receiver "127.0.0.1:$RP" --otelcol-exporter "http://127.0.0.1:$S1" \
	-o "$T/otel.yml" || fail "translate refused the contract"
$PY - "$T/otel.yml" "$S2" <<'PY'
import sys, yaml
path, port = sys.argv[1], sys.argv[2]
c = yaml.safe_load(open(path))
c["exporters"]["otlphttp/agent"] = {"endpoint": "http://127.0.0.1:%s" % port}
c["service"]["pipelines"]["metrics/agent"] = {"receivers": ["otlp"], "exporters": ["otlphttp/agent"]}
c["service"]["telemetry"] = {"metrics": {"level": "none"}}
yaml.safe_dump(c, open(path, "w"))
PY
"$OC" validate --config "$T/otel.yml" >"$T/validate.txt" 2>&1 || fail "otelcol validate: $(cat "$T/validate.txt")"
start_bg otelcol "$OC" --config "$T/otel.yml"
wait_for 30 listening $RP || fail "the Collector did not start: $(tail -5 "$T/otelcol.out")"
start_backends
start_nginx
start_agent --otlp-endpoint "http://127.0.0.1:$RP" --export-interval 1
A=127.0.0.1:$PROXY_PORT
wrk -t2 -c4 -d3s -s "$IT_DIR/wrk_mix.lua" "http://$A/" >/dev/null
hey -n 300 -c 10 -host www.shop.test "http://$A/cart/1?delay_ms=20" >/dev/null
hey -n 300 -c 5 -host canary.example.com -H 'X-Canary: 1' "http://$A/c" >/dev/null
names=gateway.networking.k8s.io.httproute.delivery.upstream_request.latency,gateway.networking.k8s.io.httproute.delivery.upstream_request.count,gateway.networking.k8s.io.httproute.test.filtered
# traffic has stopped: once the next pushes passed both pipelines the two
# views are of the same totals
equal() {
	$PY "$ROOT/selftests/translate/otlpdiff.py" --names "$names" --sum-deltas \
		--ref-dir "$T/agent" --min 10 "$T/translated"/*.pb >"$T/diff.txt" 2>&1
}
wait_for 30 equal || {
	cat "$T/diff.txt"
	fail "the Collector's translated targets differ from the agent's own"
}
log "Collector vs agent: $(tail -1 "$T/diff.txt") ($(ls "$T/agent" | wc -l) pushes)"
