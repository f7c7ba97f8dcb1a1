#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `milometer translate --target prometheus-alerts` judged by the real
# promtool: `check rules`, and `test rules` over synthetic target series
# where exactly the expected alerts fire, with their labels and annotations
# (testdata/alerts.test.yml: worked out by hand from the series); rules
# broken on purpose must fail that test; broken objective files are refused
# with file:line and the fix.
. "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || { echo "SKIP: promtool missing: deploy/install-deps.sh installs Debian's prometheus"; echo "0 passed, 1 failed"; exit 1; }
M=$T/m
mkdir -p "$M"
cp "$ROOT"/selftests/integration/manifests/base/*.yaml \
	"$ROOT"/deploy/examples/contract/seed-scenario-upstream-*.yaml "$M/"
TD=$TR_DIR/testdata

check "translate with objectives" "$BIN/milometer" translate -m "$M" -t prometheus-alerts \
	--alerts-config "$TD/alerts.yaml" --strict -o "$T/alerts.yml"
check "promtool check rules" promtool check rules "$T/alerts.yml"
cp "$TD/alerts.test.yml" "$T/"
check "promtool test rules: the expected alerts fire, the others do not" \
	promtool test rules "$T/alerts.test.yml"

mutate() { # mutate NAME SED-EXPR: the broken rules must fail the same test
	sed "$2" "$T/alerts.yml" >"$T/bad.yml"
	if cmp -s "$T/bad.yml" "$T/alerts.yml"; then
		bad "mutation '$1' did not change the rules"
		return
	fi
	sed 's/\[alerts.yml\]/[bad.yml]/' "$T/alerts.test.yml" >"$T/test-bad.yml"
	refute "promtool test rules rejects: $1" promtool test rules "$T/test-bad.yml"
}
mutate "defaults not excluding an overridden namespace" 's/resource_namespace!~"shop", //; s/{resource_namespace!~"shop"}/{}/'
mutate "defaults not excluding an overridden route" '/^      unless on/,/^      )$/d'
mutate "a namespace not excluding its overridden route" 's/, resource_name!~"checkout"//g'
mutate "namespace threshold 10% instead of 1%" '0,/) > 0.01$/s//) > 0.1/'
mutate "for: 20m instead of 2m" 's/for: 2m/for: 20m/'
mutate "p50 instead of p90" 's/histogram_quantile(0.9,/histogram_quantile(0.5,/'
mutate "errors read from 2xx" 's/response_code_family=~"5xx"/response_code_family=~"2xx"/'
mutate "a route override's severity lost" 's/severity: page/severity: warning/'

# Without a file: the documented defaults, over the seed's definitions.
check "defaults translate" "$BIN/milometer" translate -m "$M" -t prometheus-alerts -o "$T/def.yml"
check "defaults pass promtool check rules" promtool check rules "$T/def.yml"
check "defaults: 5% over 5m for 5m, p99 above 1s over 5m for 10m" bash -c "
	grep -q ') > 0.05$' '$T/def.yml' && grep -q 'histogram_quantile(0.99,' '$T/def.yml' &&
	grep -q ') > 1$' '$T/def.yml' && grep -c 'for: 5m' '$T/def.yml' | grep -qx 1 &&
	grep -q 'for: 10m' '$T/def.yml'"
"$BIN/milometer" translate -m "$M" -t prometheus-alerts --alerts-config "$TD/alerts.yaml" \
	--format prometheusrule --namespace monitoring -o "$T/pr.yml" 2>"$T/report.txt"
python3 -c "
import yaml; d=yaml.safe_load(open('$T/pr.yml'))
assert d['kind'] == 'PrometheusRule' and d['metadata']['namespace'] == 'monitoring'
yaml.safe_dump({'groups': d['spec']['groups']}, open('$T/pr-groups.yml', 'w'))" &&
	check "PrometheusRule's groups pass promtool test rules" bash -c "
		cd '$T' && sed 's/\[alerts.yml\]/[pr-groups.yml]/' alerts.test.yml >pr-test.yml &&
		promtool test rules pr-test.yml"
check "report: the policies feeding the objectives" bash -c "
	grep -q '^gateway-httproute-upstream-request-count-policy: prometheus-alerts: Translated: alerting rules HTTPRouteErrorRate' '$T/report.txt' &&
	grep -q '^gateway-httproute-upstream-latency-policy: prometheus-alerts: Translated: alerting rules HTTPRouteLatency' '$T/report.txt'"
refute "--alerts-config with another target" "$BIN/milometer" translate -m "$M" \
	-t prometheus-rules --alerts-config "$TD/alerts.yaml"

# Broken objective files: exit 2, file:line, what to write instead.
broken() { # broken NAME EXPECTED-MESSAGE-REGEX (the file on stdin)
	cat >"$T/broken.yaml"
	"$BIN/milometer" translate -m "$M" -t prometheus-alerts \
		--alerts-config "$T/broken.yaml" -o "$T/none.yml" 2>"$T/err.txt"
	local rc=$?
	if [ $rc -eq 2 ] && grep -qE "^milometer translate: $T/broken.yaml:$2" "$T/err.txt"; then
		ok "refused: $1"
	else
		bad "refused: $1 (exit $rc)"
		sed 's/^/    /' "$T/err.txt"
	fi
}
broken "a percentage for a ratio" '3: errorRate.threshold: 5 is not a ratio between 0 and 1 \(exclusive\); write 0.05 for 5%' <<'Y'
# comment
errorRate:
  threshold: 5
Y
broken "a misspelt key" '3: errorRate: unknown key "treshold"; the keys are enabled, threshold' <<'Y'
errorRate:
  window: 5m
  treshold: 0.05
Y
broken "a window in seconds as a number" '2: latency.window: expected a Prometheus duration such as 5m' <<'Y'
latency:
  window: 300
Y
broken "an error label the definition lacks" '2: errorRate.errorLabel: status_code is not a label of MetricDefinition gateway-httproute-upstream-request-count' <<'Y'
errorRate:
  errorLabel: status_code
Y
broken "a metric without a definition" "2: errorRate.metric: no accepted MetricDefinition has spec.metric.name http.requests; name one that exists" <<'Y'
errorRate:
  metric: http.requests
Y
broken "latency over a counter" '2: latency.metric: gateway.networking.k8s.io.httproute.delivery.upstream_request.count \(MetricDefinition gateway-httproute-upstream-request-count\) is not a histogram' <<'Y'
latency:
  metric: gateway.networking.k8s.io.httproute.delivery.upstream_request.count
Y
broken "an override without a namespace" '2: overrides\[0\]: namespace is required' <<'Y'
overrides:
  - name: api
    latency: {threshold: 2}
Y
broken "a route overridden twice" '4: overrides\[1\]: apps/api is already overridden at line 2; merge the two entries' <<'Y'
overrides:
  - namespace: apps
    name: api
  - namespace: apps
    name: api
Y
broken "a metric per namespace" '3: overrides\[0\].errorRate: the metric and its labels are set once, at the top level' <<'Y'
overrides:
  - namespace: shop
    errorRate: {metric: x.y}
Y
broken "a quantile of 99" '2: latency.quantile: 99 is not between 0 and 1 \(exclusive\); write 0.99 for p99' <<'Y'
latency:
  quantile: 99
Y
finish
