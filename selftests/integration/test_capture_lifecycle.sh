#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What the socket-attached capture meets in a running node:
#  1. The agent starts while thousands of connections are mid-request (a head
#     but its final CRLF, a head but its last line, a POST head and half its
#     body): those requests began before it and are not counted, nothing
#     else is taken for them, and the next request on each of those
#     connections is counted exactly (the streams that look like garbage at
#     first sight are picked up at the exchange's next turn: "resynced").
#     Every upstream request written after the start is counted (route
#     "unknown" allowed, never another route).
#  2. HTTP between two processes that are not the proxy (curl to the
#     backends directly, on loopback) is never counted.
#  3. A proxy worker killed (SIGKILL) and replaced by the master: the agent,
#     restarted onto the running proxy, counts the old and the new worker's
#     requests exactly as the access log does.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
N=${MM_IT_HELD:-3000}
# the client holds N sockets, one nginx worker up to N and their upstream
# N, the backend N: past a fresh machine's 1024 open files per process
NOFILE=$((2 * N + 1024))
[ "$(ulimit -Sn)" -ge "$NOFILE" ] || ulimit -Sn "$NOFILE" 2>/dev/null || ulimit -n "$NOFILE" ||
	fail "cannot raise the open-file limit to $NOFILE (soft $(ulimit -Sn), hard $(ulimit -Hn)): lower MM_IT_HELD"
export NGINX_WORKER_CONNECTIONS=$((2 * N + 512))
use_manifests base
start_backends
start_nginx
A=127.0.0.1:$PROXY_PORT
DOWN=envoy_http_downstream_rq_total
UP=envoy_cluster_upstream_rq_total


# 1. held mid-request across the agent's start
coproc HELD { exec $PY "$IT_DIR/held_conns.py" "$A" api.example.com /v1/status "$N"; }
read -r -t 60 line <&"${HELD[0]}" || fail "held_conns.py did not open its connections"
[ "$line" = "held $N" ] || fail "held_conns.py: $line"
start_agent
echo go >&"${HELD[1]}"
read -r -t 120 line <&"${HELD[0]}" || fail "held_conns.py did not finish"
[ "$line" = "done first=$N second=$N" ] || fail "held_conns.py: $line"
wait_log_lines "$NGINX_LOG" $((2 * N)) || fail "nginx logged $(log_lines "$NGINX_LOG") of $((2 * N))"
[ "$(mmlogcount apps/api)" = $((2 * N)) ] || fail "nginx did not route all $((2 * N)) to apps/api"
expect_metric "$N" "second requests on the held connections" $DOWN k8s_httproute_name=api
expect_metric "$N" "downstream requests in all" $DOWN
expect_metric $((2 * N)) "upstream requests written after the start" $UP
RESYNCED=$(((N + 1) / 3 + N / 3))
expect_metric "$RESYNCED" "streams picked up mid-message" milometer_bpf_resynced_total
for r in wild web unmatched; do
	[ "$(metric $UP k8s_httproute_name=$r)" = 0 ] ||
		fail "upstream requests of the held connections attributed to $r"
done
log "held connections: $N requests before the start not counted, $N after counted, $((2 * N)) upstream"

# 2. a client and a server that are not the proxy
for i in $(seq 20); do
	curl -fsS -o /dev/null "http://127.0.0.1:$PY_PORT/v1/direct" || fail "direct request to the python backend"
	curl -fsS -o /dev/null "http://127.0.0.1:$STATIC_PORT/direct" || fail "direct request to the static backend"
done
# one proxied request after them: once it is counted, so would be they
[ "$(px api.example.com /v1/status)" = 200 ] || fail "proxied request"
expect_metric $((N + 1)) "downstream requests (the direct ones must not count)" $DOWN
expect_metric $((2 * N + 1)) "upstream requests (the direct ones must not count)" $UP

# 3. a worker killed and replaced, under a fresh agent
stop_agent
: >"$NGINX_LOG"
start_agent
out=$(client send "$A" --host www.shop.test --path /cart/a --count 100)
case "$out" in "responses 100 "*) ;; *) fail "before the kill: $out" ;; esac
wait_log_lines "$NGINX_LOG" 100 || fail "nginx logged $(log_lines "$NGINX_LOG") of 100"
old=$(nginx_workers)
victim=${old%% *}
kill -KILL "$victim"
wait_for 20 nginx_workers_replaced "$victim" || fail "nginx did not replace worker $victim"
log "worker $victim killed; workers now $(nginx_workers)"
hey -n 400 -c 8 -host www.shop.test "http://$A/cart/b" >/dev/null
out=$(client send "$A" --host api.example.com --path /v1/orders --count 50)
case "$out" in "responses 50 "*) ;; *) fail "after the kill: $out" ;; esac
compare_log --expect-total 550
