#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The prometheus-rules translation live: real traffic through the proxy
# (nginx; TR_PROXY=haproxy for haproxy), a real Prometheus scraping the
# agent twice (job src keeps the envoy_* sources, job ref the agent's own
# target series) and evaluating the rules `milometer translate` generated
# from the seed's contract; every translated series equals the agent's
# target series, same name, labels and value, in both directions. Then the
# same rules in VictoriaMetrics' vmalert over VictoriaMetrics (Debian's
# victoria-metrics), which scrapes in the text format (`le="1"`).
TR_PROXY=${TR_PROXY:-nginx}
[ "$TR_PROXY" = haproxy ] && PROXY_EXE=mm-it-haproxy
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
# downstream too, through a filter and a resource-computed label
cp "$ROOT/selftests/translate/testdata/filtered.yaml" "$T/manifests/"
mkdir -p "$T/prom/data"
"$BIN/milometer" translate --manifests "$T/manifests" --target prometheus-rules \
	--strict -o "$T/prom/rules.yml" || fail "translate refused the contract"
"$BIN/milometer" translate --manifests "$T/manifests" --target prometheus-rules \
	--le-format text --strict -o "$T/prom/rules-text.yml" || fail "translate (text le)"
promtool check rules "$T/prom/rules.yml" >/dev/null || fail "promtool check rules"

start_backends
if [ "$TR_PROXY" = haproxy ]; then
	start_agent
	start_haproxy 1
else
	start_nginx
	start_agent
fi
scrape_jobs() { # the agent scraped twice: sources, and its own targets
	cat <<CFG
scrape_configs:
- job_name: src
  static_configs: [{targets: ['127.0.0.1:$AGENT_PORT']}]
  metric_relabel_configs:
  - {source_labels: [__name__], regex: 'envoy_.*', action: keep}
- job_name: ref
  static_configs: [{targets: ['127.0.0.1:$AGENT_PORT']}]
  metric_relabel_configs:
  - {source_labels: [__name__], regex: 'gateway_networking_k8s_io_.*', action: keep}
CFG
}
port_free $PROM_PORT
{
	printf 'global: {scrape_interval: 1s, evaluation_interval: 1s}\nrule_files: [%s]\n' "$T/prom/rules.yml"
	scrape_jobs
} >"$T/prom/prometheus.yml"
start_bg prometheus prometheus --config.file="$T/prom/prometheus.yml" \
	--storage.tsdb.path="$T/prom/data" \
	--web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn
PROM=http://127.0.0.1:$PROM_PORT
wait_for 30 curl -fsS "$PROM/-/ready" || fail "prometheus not ready: $(tail -5 "$T/prometheus.out")"

A=127.0.0.1:$PROXY_PORT
wrk -t2 -c4 -d3s -s "$IT_DIR/wrk_mix.lua" "http://$A/" >/dev/null
hey -n 300 -c 10 -host www.shop.test "http://$A/cart/1?delay_ms=20" >/dev/null
hey -n 300 -c 5 -host canary.example.com -H 'X-Canary: 1' "http://$A/c" >/dev/null
# Traffic has stopped: once a scrape and an evaluation follow, both sides
# are computed from one scrape of a still agent.
equal() { $PY "$IT_DIR/translate_compare.py" --url "$1" --rules "$2" >"$T/cmp.txt" 2>&1; }
wait_for 30 equal "$PROM" "$T/prom/rules.yml" || {
	cat "$T/cmp.txt"
	fail "Prometheus: translated series differ from the agent's target series"
}
log "Prometheus: $(tr '\n' ' ' <"$T/cmp.txt")"

# The backend swapped: VictoriaMetrics scrapes, vmalert evaluates.
if ! command -v victoria-metrics >/dev/null || ! command -v vmalert >/dev/null; then
	fail "victoria-metrics/vmalert missing: run deploy/install-deps.sh"
fi
VM_PORT=$((PROM_PORT + 1))
VMA_PORT=$((PROM_PORT + 2))
port_free $VM_PORT
port_free $VMA_PORT
scrape_jobs | sed 's/^scrape_configs:/global: {scrape_interval: 1s}\nscrape_configs:/' >"$T/vm-scrape.yml"
mkdir -p "$T/vm"
start_bg victoria-metrics victoria-metrics -storageDataPath="$T/vm" \
	-httpListenAddr="127.0.0.1:$VM_PORT" -promscrape.config="$T/vm-scrape.yml" \
	-search.latencyOffset=0s -loggerLevel=WARN
VM=http://127.0.0.1:$VM_PORT
wait_for 30 curl -fsS "$VM/health" || fail "victoria-metrics not ready: $(tail -5 "$T/victoria-metrics.out")"
start_bg vmalert vmalert -rule="$T/prom/rules-text.yml" -datasource.url="$VM" \
	-remoteWrite.url="$VM" -evaluationInterval=1s \
	-httpListenAddr="127.0.0.1:$VMA_PORT" -loggerLevel=WARN
hey -n 200 -c 5 -host www.shop.test "http://$A/cart/2" >/dev/null
wait_for 60 equal "$VM" "$T/prom/rules-text.yml" || {
	cat "$T/cmp.txt"
	tail -5 "$T/vmalert.out"
	fail "VictoriaMetrics/vmalert: translated series differ from the agent's target series"
}
log "VictoriaMetrics + vmalert: $(tr '\n' ' ' <"$T/cmp.txt")"
