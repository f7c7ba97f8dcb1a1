#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The metric contract end to end: nginx traffic -> the data path -> the
# seed's MetricDefinitions/MetricPolicies (deploy/examples/contract, the
# upstream request count and the upstream latency in seconds) -> target
# metrics with the definitions' labels and the access log's values.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
for f in upstream-request-count upstream-latency; do
	cp "$ROOT/deploy/examples/contract/seed-scenario-$f-metricdefinition.yaml" \
		"$ROOT/deploy/examples/contract/seed-scenario-$f-metricpolicy.yaml" \
		"$T/manifests/"
done
"$BIN/milometer" check --manifests "$T/manifests" >"$T/check.txt" 2>&1 || {
	cat "$T/check.txt"
	fail "milometer check rejects the seed's contract with the test routes"
}
start_backends
start_nginx
start_agent
wrk -t2 -c4 -d2s -s "$IT_DIR/wrk_mix.lua" "http://127.0.0.1:$PROXY_PORT/" >/dev/null
hey -n 200 -c 10 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/cart/1?delay_ms=20" >/dev/null
compare_log --no-latency
$PY "$IT_DIR/mmcheck.py" contract --url "$METRICS_URL" --log "$NGINX_LOG" ||
	fail "the contract's target metrics differ from the access log"
