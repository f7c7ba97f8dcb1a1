#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `milometer translate --target prometheus-relabel` judged by the real
# Prometheus: `promtool check config` on the scrape job, then a Prometheus
# scraping a static exposition of the policy engine's store (sources and
# targets after the same requests: selftests/tools/translate_oracle.c)
# twice: job src through the generated metric_relabel_configs, job ref
# keeping the engine's target series. Every relabelled series equals the
# engine's, same name, labels and value, both ways; relabel configs broken
# on purpose fail the same comparison. Policies that are not pure
# relabelling (the seed's) are refused with the reason.
. "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || { echo "SKIP: promtool missing: deploy/install-deps.sh installs Debian's prometheus"; echo "0 passed, 1 failed"; exit 1; }
command -v prometheus >/dev/null || { echo "prometheus missing: deploy/install-deps.sh installs Debian's prometheus"; echo "0 passed, 1 failed"; exit 1; }
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { local end=$(($(date +%s) + $1)); shift; until "$@" >/dev/null 2>&1; do [ "$(date +%s)" -lt "$end" ] || return 1; sleep 0.2; done; }
M=$T/m
mkdir -p "$M"
cp "$ROOT"/selftests/integration/manifests/base/*.yaml \
	"$ROOT"/deploy/examples/contract/seed-scenario-upstream-*.yaml \
	"$TR_DIR"/testdata/relabel.yaml "$M/"

"$BIN/milometer" translate -m "$M" -t prometheus-relabel --name src -o "$T/relabel.yml" 2>"$T/report.txt"
check "translate exits 0 with refusals" test $? -eq 0
check "promtool check config" promtool check config "$T/relabel.yml"
check "pure relabelling policies translated" bash -c "
	grep -q '^t-relabel-requests-policy: prometheus-relabel: Translated: metric_relabel_configs' '$T/report.txt' &&
	grep -q '^t-relabel-time-policy: prometheus-relabel: Translated: metric_relabel_configs' '$T/report.txt'"
check "a scaled value refused" grep -q "^gateway-httproute-upstream-latency-policy: prometheus-relabel: NotTranslatable: value: the transform changes the values (0.001 \* value + 0)" "$T/report.txt"
check "a dropped attribute refused" grep -q "^gateway-httproute-upstream-request-count-policy: prometheus-relabel: NotTranslatable: attribute http.request.method (label http_request_method) is not kept" "$T/report.txt"
# an output that is not a regular file (a FIFO here; /dev/null, /dev/stdout)
# is written in place, never replaced by a renamed regular file
mkfifo "$T/out.fifo"
timeout 30 cat "$T/out.fifo" >"$T/fifo.txt" &
reader=$!
"$BIN/milometer" translate -m "$M" -t prometheus-relabel --strict -o "$T/out.fifo" 2>/dev/null
check "--strict exits 3" test $? -eq 3
wait "$reader"
"$BIN/milometer" translate -m "$M" -t prometheus-relabel -o "$T/strict.yml" 2>/dev/null
check "a FIFO output stays a FIFO and reads the whole output" bash -c "
	test -p '$T/out.fifo' && test -s '$T/strict.yml' && cmp -s '$T/fifo.txt' '$T/strict.yml'"
refute "--format prometheusrule is not a scrape job" "$BIN/milometer" translate -m "$M" \
	-t prometheus-relabel --format prometheusrule
"$BIN/milometer" translate -m "$M" -t prometheus-relabel --source-profile envoy -o "$T/envoy.yml" 2>"$T/envoy.txt"
check "the envoy profile refused with the reason" grep -q "^t-relabel-requests-policy: prometheus-relabel: NotTranslatable: the envoy profile derives the route" "$T/envoy.txt"

# the engine's store after deterministic requests, as a scrape reads it
mkdir -p "$T/www"
"$BIN/translate_oracle" -m "$M" --route apps/api --route shop/web --route apps/wild \
	--gateway gw --format text --exposition "$T/www/metrics"
WP=$(free_port)
python3 -m http.server --bind 127.0.0.1 --directory "$T/www" "$WP" >"$T/http.log" 2>&1 &
PIDS+=($!)
wait_for 10 curl -fsS "http://127.0.0.1:$WP/metrics"
FAMS=$(sed -n "/target_label: __name__/{n;s/^    replacement: '\([a-z0-9_]*\)\(\${1}\)\{0,1\}'$/\1 \2/p}" "$T/relabel.yml")
FAMARGS=()
while read -r f h; do
	if [ -n "$h" ]; then FAMARGS+=(--family "${f}_bucket" --family "${f}_sum" --family "${f}_count")
	else FAMARGS+=(--family "$f"); fi
done <<<"$FAMS"
check "two target families relabelled" test ${#FAMARGS[@]} -eq 8

# live RELABEL-FILE NAME: a Prometheus over the exposition with these
# relabel configs; 0 when the relabelled series equal the engine's
live() {
	local pp d=$T/prom-$2
	pp=$(free_port)
	mkdir -p "$d/data"
	python3 - "$1" "$d/prometheus.yml" "127.0.0.1:$WP" <<'PY'
import sys, yaml
job = yaml.safe_load(open(sys.argv[1]))["scrape_configs"][0]
tgt = [{"targets": [sys.argv[3]]}]
job["static_configs"] = tgt
job["metric_relabel_configs"] = [{"source_labels": ["__name__"], "regex": "envoy_.*", "action": "keep"}] + \
    job["metric_relabel_configs"]
ref = {"job_name": "ref", "static_configs": tgt, "metric_relabel_configs": [
    {"source_labels": ["__name__"], "regex": "gateway_networking_k8s_io_httproute_test_relabel_.*", "action": "keep"}]}
yaml.safe_dump({"global": {"scrape_interval": "1s"}, "scrape_configs": [job, ref]}, open(sys.argv[2], "w"))
PY
	prometheus --config.file="$d/prometheus.yml" --storage.tsdb.path="$d/data" \
		--web.listen-address="127.0.0.1:$pp" --log.level=warn >"$d/log" 2>&1 &
	local pid=$!
	PIDS+=($pid)
	wait_for 30 curl -fsS "http://127.0.0.1:$pp/-/ready" || { kill $pid; return 2; }
	# both jobs scraped once at least
	wait_for 30 bash -c "curl -fsS 'http://127.0.0.1:$pp/api/v1/query?query=count(up==1)' | grep -q '\"2\"'"
	local rc=1
	if wait_for 20 python3 "$ROOT/selftests/integration/translate_compare.py" \
		--url "http://127.0.0.1:$pp" "${FAMARGS[@]}"; then
		rc=0
	fi
	python3 "$ROOT/selftests/integration/translate_compare.py" --url "http://127.0.0.1:$pp" \
		"${FAMARGS[@]}" >"$d/compare.txt" 2>&1
	# the relabelled sources are gone from the job, the others pass unchanged
	curl -fsS "http://127.0.0.1:$pp/api/v1/query?query=count(envoy_cluster_upstream_rq_total%7Bjob=%22src%22%7D)" >"$d/left.json"
	curl -fsS "http://127.0.0.1:$pp/api/v1/query?query=count(envoy_http_downstream_rq_total%7Bjob=%22src%22%7D)" >"$d/kept.json"
	kill $pid
	wait $pid 2>/dev/null
	return $rc
}
check "Prometheus: relabelled series == the engine's target series" live "$T/relabel.yml" good
sed 's/^/    /' "$T/prom-good/compare.txt"
check "the relabelled source series leave the job" grep -q '"result":\[\]' "$T/prom-good/left.json"
check "other series pass unchanged" grep -q '"result":\[{' "$T/prom-good/kept.json"

mutate() { # mutate NAME SED-EXPR: the comparison must fail
	sed "$2" "$T/relabel.yml" >"$T/bad.yml"
	if cmp -s "$T/bad.yml" "$T/relabel.yml"; then
		bad "mutation '$1' did not change the config"
		return
	fi
	nmut=$((nmut + 1))
	live "$T/bad.yml" "bad$nmut"
	local rc=$?
	# rejected by the comparison (exit 1, differences listed), not unstarted
	if [ $rc -eq 1 ] && grep -qE "series (translated, not in|the agent's, not)|values differ" "$T/prom-bad$nmut/compare.txt"; then
		ok "comparison rejects: $1"
	else
		bad "comparison rejects: $1 (live exit $rc)"
		sed 's/^/    /' "$T/prom-bad$nmut/compare.txt" 2>/dev/null | head -5
	fi
}
nmut=0
mutate "a filter widened" "s/\[2-4\]0/[2-5]0/"
mutate "a subject's uid wrong" "0,/replacement: '[0-9a-f]\{8\}-/s//replacement: 'X0000000-/"
mutate "a source label kept" "0,/target_label: milometer_aborted/{/target_label: milometer_aborted/{n;s/replacement: ''/replacement: 'x'/}}"
finish
