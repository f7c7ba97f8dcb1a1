#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# OTLP/HTTP export to bin/otlp_sink: bodies decode (protoc, the repo's
# .proto) as ExportMetricsServiceRequest with the route metrics and the
# log's counts. The sink answers 503 + Retry-After: 1, then 200, then 400,
# then 200: the 503'd body is sent again (same bytes, after >= 1 s) and
# accepted once; the 400'd body is never sent again.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx otlp_sink
use_manifests base
start_backends
start_nginx
port_free $SINK_PORT
mkdir -p "$T/otlp"
start_bg otlp-sink stdbuf -oL "$BIN/otlp_sink" --port $SINK_PORT \
	--dir "$T/otlp" --script 503:1,200,400,200
wait_for 10 listening $SINK_PORT || fail "otlp_sink did not start: $(cat "$T/otlp-sink.out")"
start_agent --otlp-endpoint "http://127.0.0.1:$SINK_PORT" --export-interval 1
hey -n 300 -c 3 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/cart/1" >/dev/null
hey -n 200 -c 2 -host api.example.com "http://127.0.0.1:$PROXY_PORT/v1/status" >/dev/null
wait_for 30 test -f "$T/otlp/req-000005.pb" ||
	fail "otlp_sink got fewer than 5 requests: $(cat "$T/otlp-sink.out")"
cat "$T/otlp-sink.out"
pb() { printf '%s/otlp/req-%06d.pb' "$T" "$1"; }
grep -q '#1 .* -> 503' "$T/otlp-sink.out" || fail "first export not answered 503"
grep -q '#2 .* -> 200' "$T/otlp-sink.out" || fail "second export not answered 200"
cmp -s "$(pb 1)" "$(pb 2)" || fail "the export answered 503 was not retried with the same body"
t1=$(stat -c %.3Y "$(pb 1)")
t2=$(stat -c %.3Y "$(pb 2)")
awk -v a="$t1" -v b="$t2" 'BEGIN { exit !(b - a >= 0.9) }' ||
	fail "retry after $t1 -> $t2: Retry-After: 1 not honoured"
grep -q '#3 .* -> 400' "$T/otlp-sink.out" || fail "third export not answered 400"
for i in 4 5; do
	cmp -s "$(pb 3)" "$(pb $i)" && fail "the export answered 400 was sent again (#$i)"
done
# every accepted body is distinct: nothing delivered twice
n=$(ls "$T/otlp" | grep -c "\.pb$")
u=$(for i in $(seq 2 "$n"); do md5sum <"$(pb "$i")"; done | sort -u | wc -l)
[ "$u" = $((n - 1)) ] || fail "$((n - 1 - u)) duplicate bodies among requests 2..$n"

# cumulative: an export made after all traffic has every request logged
wait_for 10 test -f "$(pb $((n + 1)))" || fail "exports stopped after #$n"
last=$(pb $((n + 1)))
$PY "$IT_DIR/otlpcheck.py" summary "$last" | tee "$T/summary.txt"
grep -q '^envoy.http.downstream_rq_total .*sum' "$T/summary.txt" ||
	fail "no envoy.http.downstream_rq_total Sum in the export"
grep -q '^envoy.http.downstream_rq_time unit=ms histogram' "$T/summary.txt" ||
	fail "no envoy.http.downstream_rq_time histogram in ms"
web=$(mmlogcount shop/web)
api=$(mmlogcount apps/api)
got_web=$($PY "$IT_DIR/otlpcheck.py" points "$last" envoy.http.downstream_rq_total k8s.httproute.name=web)
got_api=$($PY "$IT_DIR/otlpcheck.py" points "$last" envoy.http.downstream_rq_total k8s.httproute.name=api)
got_hist=$($PY "$IT_DIR/otlpcheck.py" points "$last" envoy.http.downstream_rq_time k8s.httproute.name=web)
log "web: log $web, otlp $got_web (histogram count $got_hist); api: log $api, otlp $got_api"
[ "$got_web" = "$web" ] && [ "$got_hist" = "$web" ] && [ "$got_api" = "$api" ] ||
	fail "OTLP counts differ from the access log"
