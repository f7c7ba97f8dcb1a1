#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# sys_exit capture mode keeps connection state in mm_conns by socket
# address, deleted by tcp_destroy_sock. Under load an entry now and then
# outlives its socket, its destroy unseen (test_close_race lost a
# connection to it); the next socket at that address must still get state
# of its own.
# conn_reuse.py writes a closed connection's entry back, as a missed close
# leaves it, until a new accepted socket takes that address, and checks
# which state it got. Ground truth: the server's own count of requests
# answered and the kernel's socket addresses (the map's keys, by bpftool).
MM_IT_CAPTURE=sys-exit
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer
command -v bpftool >/dev/null || fail "bpftool is missing (deploy/install-deps.sh installs it)"
command -v taskset >/dev/null || fail "taskset is missing (util-linux)"
use_manifests base
port_free "$PROXY_PORT"
# one CPU for both sides: a freed socket's memory goes to the next
# allocation on the CPU that freed it
start_bg server taskset -c 0 $PY "$IT_DIR/conn_reuse.py" server "$PROXY_PORT"
SERVER_PID=$LAST_PID
wait_for 10 listening "$PROXY_PORT" || fail "conn_reuse.py server did not listen: $(cat "$T/server.out")"
AGENT_TARGET=(--proxy-pid "$SERVER_PID")
start_agent
grep -q "capture mode sys-exit" "$T/agent.out" || fail "the agent is not in sys-exit capture mode: $(grep attached "$T/agent.out")"
rc=0
taskset -c 0 $PY "$IT_DIR/conn_reuse.py" drive "$PROXY_PORT" "$PIN_DIR/mm_conns" 40 \
	-- nsenter -t "$AGENT_PID" -m -r bpftool >"$T/drive.out" 2>&1 || rc=$?
cat "$T/drive.out" >&2
case $rc in
0) ;;
1) fail "a socket at the address of a connection whose close was missed was not tracked" ;;
3) fail "no accepted socket took a closed one's address in 40 tries: the check did not run (slab reuse on CPU 0 did not happen)" ;;
*) fail "conn_reuse.py drive failed (exit $rc)" ;;
esac
answered=$(grep -c '^answered' "$T/server.out")
log "server answered $answered requests"
# every connection the server read from is one the agent opened
expect_metric "$answered" "connections opened" milometer_bpf_connections_opened_total
expect_metric "$answered" "connections closed" milometer_bpf_connections_closed_total
log "ok: a socket at a missed close's address got state of its own"
