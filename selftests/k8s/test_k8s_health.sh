#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `milometer controller` as the kubelet and Prometheus see it while the API
# server comes and goes:
#  - started with the API server not there yet: /healthz 200 at once,
#    /readyz 503 with a one-line reason until every watch listed, then 200;
#  - the API server stopped for 20 s and started again on the same port:
#    milometer_k8s_watch_up shows every resource's watch down, then each
#    one back on its own within client-go's bounds, and
#    milometer_k8s_watch_restarts_total counts the restart. client-go's
#    reflector backs off 0.8 s doubling with jitter 1.0 to a 30 s cap (its
#    waits reach [30, 60) s there); milometer's waits stop at 30 s, so the
#    last attempt made while the server was away is followed by one at
#    most 30 s later. The restarted server answers every old watch with
#    410 (its history starts anew, as a watch cache does): the relist that
#    follows must not wait out that backoff again. Deadline: 30 s plus 5 s
#    for the list and watch requests.
# Ground truth: the test server's own list of open watches.
. "$(dirname "$0")/lib.sh"
M="$ROOT/bin/milometer"
[ -x "$M" ] || fail "build bin/milometer first"
DOWN_S=20
BOUND_S=35

# the API server's ports and kubeconfig, without the server yet
make_certs
API_PORT=$(free_port)
CTL_PORT=$(free_port)
export KUBECONFIG="$T/kubeconfig"
write_kubeconfig "$KUBECONFIG" "$TOKEN"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
"$M" controller --identity c1 --leader-elect-namespace milometer \
	--prometheus-listen "127.0.0.1:$PORT" >"$T/c1.log" 2>&1 &
PIDS+=($!)

code() { curl -s -o "$T/body" -w '%{http_code}' "$URL$1"; }
healthz_ok() { [ "$(code /healthz)" = 200 ]; }
readyz_is() { [ "$(code /readyz)" = "$1" ]; }
# up_count: resources whose watch the controller says is up, of how many
up_count() {
	curl -fsS "$URL/metrics" | $PY -c '
import sys
up = n = 0
for l in sys.stdin:
    if l.startswith("milometer_k8s_watch_up{"):
        n += 1
        up += l.rsplit(" ", 1)[1].strip() in ("1", "1.0")
print(up, n)'
}
all_up() { local u; u=$(up_count); [ "${u% *}" = "${u#* }" ] && [ "${u#* }" -gt 0 ]; }
all_down() { local u; u=$(up_count); [ "${u% *}" = 0 ] && [ "${u#* }" -gt 0 ]; }
server_watches() { ctl /ctl/watches | $PY -c 'import json,sys; print(len(json.load(sys.stdin)))'; }

t_ready_waits_for_the_api() {
	wait_for 10 healthz_ok || fail "no /healthz 200 within 10 s of start: $(tail -3 "$T/c1.log")"
	readyz_is 503 || fail "/readyz $(code /readyz) with no API server, want 503"
	[ "$(wc -l <"$T/body")" = 1 ] || fail "the 503 reason is not one line: $(cat "$T/body")"
	grep -q "waiting for the Kubernetes API server" "$T/body" ||
		fail "the 503 reason does not say what it waits for: $(cat "$T/body")"
	log "before the API server: /readyz 503 \"$(cat "$T/body")\""
	start_apiserver
	printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: milometer}\n' | kubectl apply -f - >/dev/null
	wait_for $BOUND_S readyz_is 200 || fail "/readyz still $(code /readyz) ($(cat "$T/body")) $BOUND_S s after the API server started"
	log "ready after the API server started"
}

t_watches_recover_after_restart() {
	wait_for 20 all_up || fail "not every watch up: $(up_count)"
	local n
	n=$(up_count)
	n=${n#* }
	[ "$(server_watches)" -ge "$n" ] || fail "the controller says $n watches are up, the server has $(server_watches) open"
	curl -fsS "$URL/metrics" | grep '^milometer_k8s_watch_restarts_total' >"$T/restarts.before"
	# started by the test before (run_tests runs each in a subshell)
	API_PID=$(pgrep -f "k8s_apiserver.py --listen 127.0.0.1:$API_PORT ")
	stop_apiserver
	wait_for 10 all_down || fail "watches not shown down after the API server stopped: $(up_count)"
	log "API server stopped: $(up_count) watches up; down for $DOWN_S s"
	# the outage itself: how long the API server is away is the scenario
	sleep $DOWN_S
	local t0=$SECONDS
	start_apiserver
	wait_for $BOUND_S all_up || {
		curl -fsS "$URL/metrics" | grep -E '^milometer_k8s_watch_(up|state)' | grep -v ' 0$'
		requests | grep -E 'watch=true|resourceVersion=' | tail -20
		fail "not every watch back $BOUND_S s after the API server restarted: $(up_count)"
	}
	log "all $n watches back $((SECONDS - t0)) s after the restart"
	[ "$(server_watches)" -ge "$n" ] || fail "the server has $(server_watches) open watches, want $n"
	# every resource counted its own restart
	curl -fsS "$URL/metrics" | $PY -c '
import sys
before = {}
for l in open(sys.argv[1]):
    k, v = l.rsplit(" ", 1)
    before[k] = float(v)
bad = []
n = 0
for l in sys.stdin:
    if l.startswith("milometer_k8s_watch_restarts_total{"):
        k, v = l.rsplit(" ", 1)
        n += 1
        if float(v) < before.get(k, 0) + 1:
            bad.append(l.strip())
if bad or not n:
    print("restarts not counted:", bad or "no series"); sys.exit(1)' "$T/restarts.before" ||
		fail "milometer_k8s_watch_restarts_total did not count every resource's restart"
}

run_tests t_ready_waits_for_the_api t_watches_recover_after_restart
