#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `milometer top` against outside ground truth. Real nginx, real traffic
# (wrk's mix of hosts, paths and methods, plus requests no rule matches),
# a real Prometheus scraping the agent every second:
#  - `top --once -o json` from the debug socket: per rule and leg, the
#    requests and successes equal nginx's access log; p50/p95/p99 equal
#    Prometheus' histogram_quantile() over the same buckets;
#  - `top --prometheus-url` gives the same rows and figures;
#  - while load runs, the busy rows show requests per second;
#  - live in a terminal (tmux): the screen refreshes every second, and a
#    sort key (--sort, then a key press) reorders the rows.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
command -v prometheus >/dev/null || fail "prometheus missing: run deploy/install-deps.sh"
command -v tmux >/dev/null || fail "tmux missing: run deploy/install-deps.sh"
use_manifests base
start_backends
start_nginx
start_agent
port_free $PROM_PORT
mkdir -p "$T/prom/data"
cat >"$T/prom/prometheus.yml" <<CFG
global:
  scrape_interval: 1s
scrape_configs:
- job_name: milometer
  static_configs:
  - targets: ['127.0.0.1:$AGENT_PORT']
CFG
start_bg prometheus prometheus --config.file="$T/prom/prometheus.yml" \
	--storage.tsdb.path="$T/prom/data" \
	--web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn
PROM=http://127.0.0.1:$PROM_PORT
wait_for 30 curl -fsS "$PROM/-/ready" || fail "prometheus not ready"
top() { "$BIN/milometer" top --socket "$T/agent.sock" "$@"; }

# during load: requests per second on the busy rows
wrk -t2 -c4 -d4s -s "$IT_DIR/wrk_mix.lua" "http://127.0.0.1:$PROXY_PORT/" >/dev/null &
wrk_pid=$!
wait_log_lines "$NGINX_LOG" 200 || fail "no traffic through nginx"
top --once -o json >"$T/top-load.json" || fail "top --once failed"
wait $wrk_pid
$PY - "$T/top-load.json" <<'PYEOF' || fail "no row shows requests per second under load: $(cat "$T/top-load.json")"
import json, sys
rows = json.load(open(sys.argv[1]))
busy = [r for r in rows if (r["rps"] or 0) > 10]
print("%d rows, %d with more than 10 requests/s" % (len(rows), len(busy)))
sys.exit(0 if busy else 1)
PYEOF
# requests no rule matches: the unmatched row
for i in $(seq 5); do px nohost.test /x >/dev/null; done
compare_log --no-latency

top --once -o json >"$T/top.json" || fail "top --once failed"
$PY "$IT_DIR/topcheck.py" counts --top "$T/top.json" --log "$NGINX_LOG" ||
	fail "top's counts differ from the access log"
grep -q '"route":"unmatched"' "$T/top.json" || fail "no unmatched row in top"
top --once | tee "$T/top.txt" | grep -q '^unmatched ' || fail "no unmatched row in the table: $(cat "$T/top.txt")"

# Prometheus has scraped the final figures when its total equals top's
total=$($PY -c 'import json,sys; print(int(sum(r["requests"] for r in json.load(open(sys.argv[1])) if r["leg"] == "downstream")))' "$T/top.json")
prom_total() {
	curl -fsS "$PROM/api/v1/query" --data-urlencode 'query=sum(envoy_http_downstream_rq_total)' |
		grep -q "\"$total\"\]"
}
wait_for 20 prom_total || fail "prometheus never reached $total requests"
$PY "$IT_DIR/topcheck.py" quantiles --top "$T/top.json" --prom "$PROM" ||
	fail "top's percentiles differ from prometheus' histogram_quantile()"
"$BIN/milometer" top --prometheus-url "$PROM" --once -o json >"$T/top-prom.json" ||
	fail "top --prometheus-url failed"
$PY "$IT_DIR/topcheck.py" same --top "$T/top.json" --other "$T/top-prom.json" ||
	fail "top from prometheus differs from top from the agent"

# live in a terminal
# a tmux server of its own (socket in $T): no other session, no user config
: >"$T/tmux.conf"
tmx() { tmux -S "$T/tmux.sock" -f "$T/tmux.conf" "$@"; }
sess=mm-top
tmx new-session -d -s "$sess" -x 160 -y 40 \
	"$BIN/milometer top --socket $T/agent.sock --sort requests"
# errexit holds in the trap too: nothing in it may fail before cleanup
trap 'rc=$?; set +e; tmx kill-server 2>/dev/null; (exit $rc); cleanup' EXIT
pane() { tmx capture-pane -p -t "$sess"; }
header_time() { pane | sed -n 's/^milometer top  \([0-9:]*\) .*/\1/p'; }
pane_has() { pane | grep -q "$1"; }
wait_for 10 pane_has "sort requests" || fail "top did not draw: $(pane)"
t1=$(header_time)
refreshed() { [ "$(header_time)" != "$t1" ]; }
wait_for 5 refreshed || fail "the screen did not refresh within 5 s"
pane >"$T/tmux-requests.txt"
# sorted by requests: the REQUESTS column (last) never grows going down
sorted_desc() {
	pane | awk -v col="$1" '/^ROUTE/ {on=1; next} on && NF > 3 { v = $(NF - col); sub(/ms$/, "", v); v = (v == "-") ? -1 : v + 0; if (n++ && v > last + 1e-9) bad = 1; last = v } END { exit bad || n < 3 }'
}
sorted_desc 0 || fail "rows not sorted by requests: $(pane)"
tmx send-keys -t "$sess" 9
wait_for 5 pane_has "sort p95" || fail "key 9 did not sort by p95: $(pane)"
pane >"$T/tmux-p95.txt"
sorted_desc 2 || fail "rows not sorted by p95: $(pane)"
tmx send-keys -t "$sess" q
gone() { ! tmx has-session -t "$sess" 2>/dev/null; }
wait_for 5 gone || fail "q did not quit top"
log "top: counts, percentiles, prometheus view and the live screen all check out"
