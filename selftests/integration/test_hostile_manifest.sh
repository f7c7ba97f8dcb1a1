#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A tenant's hostile objects land in the running agent's manifests while
# wrk runs: an HTTPRoute (older than every other, so it would win ties)
# whose second rule carries a regex that cost POSIX regex 554 MB and 30 s,
# one past the Gateway API's rule limit, the anchor-on-a-key document that
# read freed memory, a 100k-key map, and a FIFO named *.yaml (opening it
# used to block the loop that drains the ring buffer). The regex rule is
# dropped alone (Gateway API PartiallyInvalid: its route keeps its other
# rule, which no request here asks for) and logged; each other object is
# left out with a logged reason and counted in
# milometer.routes.objects_rejected; the agent must stay up, and every
# request must still be counted for the route it was counted for before:
# the agent's counts equal nginx's access log exactly. The ring buffer is
# small (1 MiB, ~0.15 s of this load) and reading those files takes the
# agent's event loop longer (0.2-0.6 s): the ring's own reader thread must
# queue every record meanwhile, none dropped in the kernel or in the queue
# (4 MiB, heads queued without the ring's padding). Then
# the debug socket gets an oversized, a binary and a silent request.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
start_agent --ringbuf-bytes 1048576

hostile() {
	local m=$T/manifests
	cat >"$T/thief.tmp" <<'YAML'
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: thief
  namespace: evil
  creationTimestamp: "2000-01-01T00:00:00Z"
spec:
  parentRefs: [{name: gw, namespace: infra}]
  hostnames: ["api.example.com"]
  rules:
  - matches: [{path: {type: Exact, value: /v1/thief-only}}]
  - matches: [{path: {type: RegularExpression, value: "/(.{0,255}){0,255}"}}]
YAML
	mv "$T/thief.tmp" "$m/thief.yaml"
	{
		printf 'apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n'
		printf 'metadata: {name: many, namespace: evil}\nspec:\n'
		printf '  hostnames: ["api.example.com"]\n'
		printf '  parentRefs: [{name: gw, namespace: infra}]\n  rules:\n'
		for i in $(seq 0 16); do
			printf '  - matches: [{path: {type: Exact, value: /v1/status}}]\n'
		done
	} >"$T/many.tmp"
	mv "$T/many.tmp" "$m/many.yaml"
	printf '&a foo: bar\nbaz: *a\n--- &b ~\n--- [*b]\n' >"$T/uaf.tmp"
	mv "$T/uaf.tmp" "$m/uaf.yaml"
	awk 'BEGIN { for (i = 0; i < 100000; i++) printf "key%07d: v\n", i }' \
		>"$T/keys.tmp"
	mv "$T/keys.tmp" "$m/keys.yaml"
	mkfifo "$m/fifo.yaml"
}

rejected() { metric milometer_routes_objects_rejected; }
at_least_rejected() { [ "$(rejected)" -ge "$1" ] 2>/dev/null; }

start_bg wrk wrk -t1 -c4 -d6s -s "$IT_DIR/wrk_update.lua" \
	"http://127.0.0.1:$PROXY_PORT/"
WRK=$LAST_PID
wait_log_lines "$NGINX_LOG" 2000 || fail "no load reached nginx"
reloads0=$(metric milometer_routes_reloads_total)
log "hostile manifests under load ($(log_lines "$NGINX_LOG") requests so far)"
hostile
# many, uaf (not an object), keys (not an object), fifo; thief's rule 1
wait_for 20 at_least_rejected 4 ||
	fail "the agent did not leave out the hostile objects (rejected: $(rejected)); log: $(tail -5 "$T/agent.out")"
metric_grew milometer_routes_reloads_total "$reloads0" 1 ||
	fail "no new route table was installed after the hostile files"
wait "$WRK" || true
cat "$T/wrk.out"
alive "$AGENT_PID" || fail "the agent died"
grep -q "HTTPRoute evil/thief: Dropped Rule 1: .*thief.yaml:12: invalid regular expression" "$T/agent.out" ||
	fail "the agent log does not say the regex rule was dropped: $(grep thief "$T/agent.out")"
for why in "many.yaml:.*spec.rules has 17 items; the Gateway API allows at most 16" \
	"fifo.yaml: not a regular file" \
	"uaf.yaml:.*not a Kubernetes object: expected a mapping" \
	"keys.yaml:.*not a Kubernetes object: expected a mapping"; do
	grep -q "manifest left out: .*$why" "$T/agent.out" ||
		fail "the agent log does not say why: $why"
done
# nothing lost while the event loop read the files
lost=$(metric milometer_bpf_ringbuf_full_total)
queue_full=$(metric milometer_events_dropped_total reason=queue_full)
log "while the manifests were read: $lost records lost in the ring buffer, $queue_full in the agent's queue (peak $(metric milometer_events_queue_peak_bytes) bytes)"
[ "$lost" = 0 ] && [ "$queue_full" = 0 ] ||
	fail "records were lost while the event loop read the manifests: ring buffer full $lost, queue full $queue_full"
# nothing moved: api's /v1/status is still api's, every count exact
compare_log --latency-info
[ "$(metric envoy_http_downstream_rq_total k8s_httproute_name=thief)" = 0 ] ||
	fail "the hostile route was counted"

# the debug socket: bounded, malformed answered, a silent client is cut
sock=$T/agent.sock
out=$($PY - "$sock" <<'PY'
import socket, sys, time
def ask(data, wait=0):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(sys.argv[1])
    if wait:
        time.sleep(wait)
    if data:
        s.sendall(data)
    t0 = time.monotonic()
    buf = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        buf += b
    s.close()
    return buf.decode(errors="replace").strip(), time.monotonic() - t0
print(ask(b"x" * 4096)[0])
print(ask(b"\x00\x01\x02status\n")[0])
msg, took = ask(b"", wait=0)
print(msg, "%.2f" % took)
PY
)
log "debug socket answers: $out"
grep -q "error: request longer than 255 bytes" <<<"$out" ||
	fail "an oversized debug request was not refused: $out"
grep -q "error: the request holds bytes that are not text" <<<"$out" ||
	fail "a binary debug request was not refused: $out"
grep -q "error: no complete request within 100 ms" <<<"$out" ||
	fail "a silent debug client was not cut: $out"
ctl status | grep -q "^milometer" || fail "ctl status stopped answering"
rm -f "$T/manifests/fifo.yaml"
stop_agent
