#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `milometer translate --target prometheus-rules` judged by the real
# promtool: `check rules` on every output, and `test rules` whose expected
# samples are the agent's own policy engine's target series for the same
# source series (selftests/tools/translate_oracle.c), for OpenMetrics and
# text `le` forms. Deliberately broken translations must fail the same
# test; untranslatable policies are refused with a reason (exit 3 --strict).
. "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || { echo "SKIP: promtool missing: deploy/install-deps.sh installs Debian's prometheus"; echo "0 passed, 1 failed"; exit 1; }
M=$T/m
mkdir -p "$M"
cp "$ROOT"/selftests/integration/manifests/base/*.yaml \
	"$ROOT"/deploy/examples/contract/seed-scenario-upstream-*.yaml \
	"$TR_DIR"/testdata/filtered.yaml "$M/"
routes=(--route apps/api --route shop/web --route apps/wild --gateway gw)

for fmt in openmetrics text; do
	check "translate ($fmt le)" "$BIN/milometer" translate -m "$M" -t prometheus-rules \
		--le-format $fmt --strict -o "$T/rules-$fmt.yml"
	check "promtool check rules ($fmt)" promtool check rules "$T/rules-$fmt.yml"
	(cd "$T" && "$BIN/translate_oracle" -m "$M" --rules "rules-$fmt.yml" "${routes[@]}" \
		--format $fmt -o "test-$fmt.yml")
	check "oracle covers every target family ($fmt)" \
		test "$(grep -c '^  - expr:' "$T/test-$fmt.yml")" -eq 5
	check "promtool test rules: rules == policy engine ($fmt)" \
		promtool test rules "$T/test-$fmt.yml"
done

# Broken translations the test must reject (each one a way to get it wrong).
mutate() { # mutate NAME FMT SED-EXPR
	sed "$3" "$T/rules-$2.yml" >"$T/bad.yml"
	if cmp -s "$T/bad.yml" "$T/rules-$2.yml"; then
		bad "mutation '$1' did not change the rules"
		return
	fi
	sed "s/rules-$2.yml/bad.yml/" "$T/test-$2.yml" >"$T/test-bad.yml"
	refute "promtool test rules rejects: $1" promtool test rules "$T/test-bad.yml"
}
mutate "one le mapped to a wrong bound" openmetrics 's/"t:0.25"/"t:0.025"/g'
mutate "scale 1/100 instead of 1/1000" openmetrics 's/0\.001 \* /0.01 * /'
mutate "OpenMetrics le form kept as text" openmetrics 's/"t:1.0", "le", "1000\\\\.0"/"t:1", "le", "1000\\\\.0"/'
mutate "text le form printed as OpenMetrics" text 's/"t:1800", "le", "1\\\\.8e\\\\+06"/"t:1800.0", "le", "1\\\\.8e\\\\+06"/'
mutate "a subject's uid wrong" openmetrics '0,/"resource_uid", "[0-9a-f]/s//"resource_uid", "X/'
mutate "a subject dropped" openmetrics '/or label_replace(label_replace(label_replace(envoy_cluster_upstream_rq_total{k8s_httproute_name="web"/d'
mutate "regex filter anchored" openmetrics 's/=~"\.\*(?:\(\[2-4\]0\))\.\*"/=~"\1"/'
mutate "source label not dropped" openmetrics 's/sum without (k8s_httproute_name, /sum without (/'
mutate "_sum without rescale" openmetrics '/_sum$/,/^  - record/s/(0\.001 \* /(/'

# Honest refusals.
cp "$TR_DIR"/testdata/refused.yaml "$M/"
"$BIN/milometer" translate -m "$M" -t prometheus-rules -o "$T/partial.yml" 2>"$T/report.txt"
check "refusals do not fail without --strict" test $? -eq 0
"$BIN/milometer" translate -m "$M" -t prometheus-rules --strict -o "$T/partial.yml" 2>/dev/null
check "--strict exits 3 on a refusal" test $? -eq 3
check "non-affine value refused" grep -q "^t-squared-policy: prometheus-rules: NotTranslatable: value: .value \* value. is not affine" "$T/report.txt"
check "computed attribute label refused" grep -q "^t-computed-label-policy: prometheus-rules: NotTranslatable: label method" "$T/report.txt"
check "decreasing histogram transform refused" grep -q "^t-negative-hist-policy: prometheus-rules: NotTranslatable: .*scale > 0" "$T/report.txt"
check "refused policies left out" bash -c "! grep -q 'test_squared\|test_computed\|test_negative' '$T/partial.yml'"
check "the rest still translated" cmp "$T/partial.yml" "$T/rules-openmetrics.yml"
"$BIN/milometer" translate -m "$M" -t prometheus-rules --json -o "$T/partial.yml" 2>"$T/report.json"
check "--json report parses" python3 -c "
import json,sys; r=json.load(open('$T/report.json'))
assert sum(not x['translated'] for x in r) == 3 and all(x['target'] == 'prometheus-rules' for x in r), r"

# The seed's examples and the project's deploy/examples, both targets:
# golden files (output and per-policy report), and promtool on the rules.
G=$TR_DIR/golden
EXM=(-m "$ROOT/deploy/examples")
"$BIN/milometer" translate "${EXM[@]}" -t prometheus-rules --format prometheusrule \
	--namespace monitoring -o "$T/pr.yml" 2>"$T/pr.report"
check "golden: examples as PrometheusRule" diff -u "$G/examples.prometheusrule.yml" "$T/pr.yml"
check "golden: examples prometheus-rules report" diff -u "$G/examples.prometheus-rules.report" "$T/pr.report"
python3 -c "
import yaml; d=yaml.safe_load(open('$T/pr.yml'))
assert d['kind'] == 'PrometheusRule' and d['apiVersion'] == 'monitoring.coreos.com/v1'
yaml.safe_dump({'groups': d['spec']['groups']}, open('$T/pr-groups.yml', 'w'))" &&
	check "PrometheusRule's groups pass promtool check rules" promtool check rules "$T/pr-groups.yml"
"$BIN/milometer" translate "${EXM[@]}" -t kube-state-metrics -o "$T/ksm.yml" 2>"$T/ksm.report"
check "golden: examples as kube-state-metrics config" diff -u "$G/examples.ksm.yml" "$T/ksm.yml"
check "golden: examples kube-state-metrics report" diff -u "$G/examples.kube-state-metrics.report" "$T/ksm.report"
"$BIN/milometer" translate "${EXM[@]}" -t otelcol -o "$T/otel.yml" 2>"$T/otel.report"
check "golden: examples as Collector config" diff -u "$G/examples.otelcol.yml" "$T/otel.yml"
check "golden: examples otelcol report" diff -u "$G/examples.otelcol.report" "$T/otel.report"
finish
