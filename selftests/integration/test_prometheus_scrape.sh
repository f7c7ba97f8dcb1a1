#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A real Prometheus server (Debian's) scrapes the agent every second while
# nginx traffic flows; its query API must return the access log's
# per-route request counts and histogram counts. The agent's /metrics
# output passes `promtool check metrics`.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
command -v prometheus >/dev/null || fail "prometheus missing: run deploy/install-deps.sh"
use_manifests base
start_backends
start_nginx
start_agent
port_free $PROM_PORT
mkdir -p "$T/prom/data"
cat >"$T/prom/prometheus.yml" <<CFG
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
- job_name: milometer
  static_configs:
  - targets: ['127.0.0.1:$AGENT_PORT']
CFG
start_bg prometheus prometheus --config.file="$T/prom/prometheus.yml" \
	--storage.tsdb.path="$T/prom/data" \
	--web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn
PROM=http://127.0.0.1:$PROM_PORT
wait_for 30 curl -fsS "$PROM/-/ready" || fail "prometheus not ready: $(tail -5 "$T/prometheus.out")"
target_up() {
	curl -fsS "$PROM/api/v1/query?query=up%7Bjob%3D%22milometer%22%7D" |
		grep -q '"value":\[[0-9.]*,"1"\]'
}
wait_for 20 target_up || fail "prometheus does not see the agent as up"

wrk -t2 -c4 -d3s -s "$IT_DIR/wrk_mix.lua" "http://127.0.0.1:$PROXY_PORT/" >/dev/null
hey -n 500 -c 5 -host canary.example.com -H 'X-Canary: 1' \
	"http://127.0.0.1:$PROXY_PORT/c" >/dev/null
# the agent itself agrees with the log first ...
compare_log --no-latency
# ... then what prometheus stored
$PY "$IT_DIR/mmcheck.py" promql --prom "$PROM" --log "$NGINX_LOG" ||
	fail "prometheus' view differs from the access log"

metrics >"$T/metrics.txt"
# promtool must be clean on everything /metrics serves: no lint accepted
# (the ms source histograms carry Envoy's names, with no unit suffix).
promtool check metrics <"$T/metrics.txt" >"$T/promtool.txt" 2>&1 ||
	fail "promtool check metrics rejects the agent's /metrics: $(cat "$T/promtool.txt")"
[ ! -s "$T/promtool.txt" ] ||
	fail "promtool check metrics complains: $(cat "$T/promtool.txt")"
grep -q '^envoy_http_downstream_rq_time_bucket{' "$T/metrics.txt" ||
	fail "no envoy_http_downstream_rq_time histogram in /metrics"
log "promtool check metrics: ok ($(grep -c '^[a-z]' "$T/metrics.txt") samples)"
