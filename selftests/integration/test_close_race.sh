#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A connection shut down by one thread while another reads it: no side
# entry outlives its connection. bin/shutdown_race's server (traced by
# pid) reads request heads that never end, so every read saves the head's
# route state to mm_route_accs (and its copy to mm_conn_exts: the base
# routes have header matches, so a head may be finished in user space),
# while its main thread shuts the socket down at a varied instant of those
# reads. Ground truth: the server's own count of connections and reads,
# and the maps' entries read with bpftool, not through the agent.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer shutdown_race
command -v bpftool >/dev/null || fail "bpftool is missing (deploy/install-deps.sh installs it)"
use_manifests base
CONNS=${MM_IT_RACE_CONNS:-3000}
RACE_PORT=$PROXY_PORT
start_bg server "$BIN/shutdown_race" server "$RACE_PORT" "$CONNS"
SERVER_PID=$LAST_PID
wait_for 10 listening "$RACE_PORT" || fail "shutdown_race server did not listen"
AGENT_TARGET=(--proxy-pid "$SERVER_PID")
start_agent

entries() { bpftool map dump name "$1" -j 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }

"$BIN/shutdown_race" client "$RACE_PORT" "$CONNS" || fail "shutdown_race client failed"
wait "$SERVER_PID" || fail "shutdown_race server failed: $(cat "$T/server.out")"
read -r _ conns _ reads < <(grep '^conns ' "$T/server.out")
log "server: $conns connections, $reads reads"
[ "$conns" = "$CONNS" ] || fail "the server served $conns of $CONNS connections"
# each read but a connection's last ends inside its head: that many saves
[ "$reads" -ge $((2 * CONNS)) ] || fail "only $reads reads in $CONNS connections"
# every shutdown ended a connection the agent tracked
expect_metric "$CONNS" "connections closed" milometer_bpf_connections_closed_total
ra=$(entries mm_route_accs)
ext=$(entries mm_conn_exts)
log "entries left: mm_route_accs $ra, mm_conn_exts $ext"
[ "$ra" = 0 ] || fail "$ra mm_route_accs entries outlived their connections"
[ "$ext" = 0 ] || fail "$ext mm_conn_exts entries outlived their connections"
expect_metric 0 "route states lost" milometer_bpf_route_state_lost_total
log "ok: $CONNS connections shut down mid-read, no entry left"
