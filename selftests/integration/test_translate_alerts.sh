#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The prometheus-alerts translation live: nginx traffic where one route
# fails (half its requests answered 503 by the backend) and another is slow
# (400 ms), a real Prometheus scraping the agent's target series and
# evaluating the alert rules `milometer translate` generated from the seed's
# contract and an objectives file. The alerts Prometheus fires
# (/api/v1/alerts) are exactly those the access log calls for: the failing
# route's error rate, the slow route's latency, and nothing for the healthy
# route.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
command -v prometheus >/dev/null || fail "prometheus missing: run deploy/install-deps.sh"
use_manifests base
for f in upstream-request-count upstream-latency; do
	cp "$ROOT/deploy/examples/contract/seed-scenario-$f-metricdefinition.yaml" \
		"$ROOT/deploy/examples/contract/seed-scenario-$f-metricpolicy.yaml" \
		"$T/manifests/"
done
mkdir -p "$T/prom/data"
cat >"$T/objectives.yaml" <<'Y'
errorRate: {threshold: 0.2, window: 1m, for: 2s}
latency: {threshold: 0.15, window: 1m, for: 2s}
Y
"$BIN/milometer" translate --manifests "$T/manifests" --target prometheus-alerts \
	--alerts-config "$T/objectives.yaml" --strict -o "$T/prom/alerts.yml" ||
	fail "translate refused the objectives"
promtool check rules "$T/prom/alerts.yml" >/dev/null || fail "promtool check rules"

start_backends
start_nginx
start_agent
port_free $PROM_PORT
cat >"$T/prom/prometheus.yml" <<CFG
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [$T/prom/alerts.yml]
scrape_configs:
- job_name: milometer
  static_configs: [{targets: ['127.0.0.1:$AGENT_PORT']}]
  metric_relabel_configs:
  - {source_labels: [__name__], regex: 'gateway_networking_k8s_io_.*', action: keep}
CFG
start_bg prometheus prometheus --config.file="$T/prom/prometheus.yml" \
	--storage.tsdb.path="$T/prom/data" \
	--web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn
PROM=http://127.0.0.1:$PROM_PORT
wait_for 30 curl -fsS "$PROM/-/ready" || fail "prometheus not ready: $(tail -5 "$T/prometheus.out")"

A=127.0.0.1:$PROXY_PORT
# shop/web fails: half its requests answered 503; apps/wild is slow; apps/api
# is fine. Spread over several scrapes: Prometheus' rate() counts only what
# a counter gains after its first sample, and the series are born with the
# traffic.
hp=()
hey -z 8s -c 2 -q 5 -host www.shop.test "http://$A/cart/1?status=503" >/dev/null & hp+=($!)
hey -z 8s -c 2 -q 5 -host www.shop.test "http://$A/cart/2" >/dev/null & hp+=($!)
hey -z 8s -c 4 -q 2 -host canary.example.com -H 'X-Canary: 1' "http://$A/c?delay_ms=400" >/dev/null & hp+=($!)
hey -z 8s -c 2 -q 10 -host api.example.com "http://$A/v1/items" >/dev/null & hp+=($!)
wait "${hp[@]}"
$PY "$IT_DIR/alertcheck.py" --prom "$PROM" --log "$NGINX_LOG" \
	--error-ratio 0.2 --latency-s 0.15 >"$T/alerts.txt" 2>&1 || {
	cat "$T/alerts.txt"
	fail "the alerts Prometheus fires are not the ones the access log calls for"
}
log "$(tr '\n' ';' <"$T/alerts.txt")"
