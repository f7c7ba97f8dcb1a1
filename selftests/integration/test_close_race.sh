#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A connection shut down by one thread while another reads it: no side
# entry outlives its connection. bin/shutdown_race's server (traced by
# pid) reads request heads that never end, so every read saves the head's
# route state to mm_route_accs (and its copy to mm_conn_exts: the base
# routes have header matches, so a head may be finished in user space),
# while its main thread shuts the socket down at a varied instant of those
# reads. Ground truth: the server's own count of connections and reads,
# and the maps' entries read with bpftool, not through the agent (the
# agent's own maps, by its pins: another agent's maps of the same names
# are no concern of this test).
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer shutdown_race
command -v bpftool >/dev/null || fail "bpftool is missing (deploy/install-deps.sh installs it)"
use_manifests base
CONNS=${MM_IT_RACE_CONNS:-3000}
RACE_PORT=$PROXY_PORT
port_free "$RACE_PORT"
start_bg server "$BIN/shutdown_race" server "$RACE_PORT" "$CONNS"
SERVER_PID=$LAST_PID
wait_for 10 listening "$RACE_PORT" || fail "shutdown_race server did not listen"
AGENT_TARGET=(--proxy-pid "$SERVER_PID")
start_agent
for m in mm_route_accs mm_conn_exts; do
	[ "$(map_entries $m)" = 0 ] || fail "$m: $(map_entries $m) before any connection"
done

# while the client runs, the most entries seen at once: the test is only
# worth something if the parser makes them
echo "0 0" >"$T/max"
(
	max_ra=0 max_ext=0
	while [ ! -e "$T/client.done" ] && [ -d "$T" ]; do
		ra=$(map_entries mm_route_accs) ext=$(map_entries mm_conn_exts)
		# a count, or why there is none (said once, the sample skipped)
		if [[ ! $ra$ext =~ ^[0-9]+$ ]]; then
			[ -e "$T/sampler.err" ] || echo "$ra; $ext" >"$T/sampler.err"
			sleep 0.05
			continue
		fi
		[ "$ra" -le "$max_ra" ] || max_ra=$ra
		[ "$ext" -le "$max_ext" ] || max_ext=$ext
		echo "$max_ra $max_ext" >"$T/max.tmp" && mv "$T/max.tmp" "$T/max"
		sleep 0.05
	done
) &
SAMPLER=$!
BG_PIDS+=("$SAMPLER")
BG_NAMES+=(sampler)
"$BIN/shutdown_race" client "$RACE_PORT" "$CONNS" || fail "shutdown_race client failed"
touch "$T/client.done"
wait "$SAMPLER"
wait "$SERVER_PID" || fail "shutdown_race server failed: $(cat "$T/server.out")"
read -r _ conns _ reads _ raced _ read_conns < <(grep '^conns ' "$T/server.out")
read -r max_ra max_ext <"$T/max"
[ ! -e "$T/sampler.err" ] || fail "the agent's maps could not be read: $(cat "$T/sampler.err")"
log "server: $conns connections, $read_conns read from, $reads reads, $raced shut down while read; entries seen at once: mm_route_accs $max_ra, mm_conn_exts $max_ext"
[ "$conns" = "$CONNS" ] || fail "the server served $conns of $CONNS connections"
[ "$raced" -ge $((CONNS * 9 / 10)) ] ||
	fail "only $raced of $CONNS connections were shut down while being read"
[ "$max_ra" -gt 0 ] && [ "$max_ext" -gt 0 ] ||
	fail "the agent made no entries to race for (mm_route_accs $max_ra, mm_conn_exts $max_ext)"
# every connection the server read from is one the agent tracked, and its
# shutdown ended it (one the client sent nothing on before the server's
# deadline carried no bytes to see: it happens on a loaded machine)
log "BPF runs the kernel skipped (nested on one CPU): $(metric milometer_bpf_run_missed_total)"
expect_metric "$read_conns" "connections closed" milometer_bpf_connections_closed_total
ra=$(map_entries mm_route_accs)
ext=$(map_entries mm_conn_exts)
log "entries left: mm_route_accs $ra, mm_conn_exts $ext"
[ "$ra" = 0 ] || fail "$ra mm_route_accs entries outlived their connections"
[ "$ext" = 0 ] || fail "$ext mm_conn_exts entries outlived their connections"
expect_metric 0 "route states lost" milometer_bpf_route_state_lost_total
log "ok: $CONNS connections shut down mid-read, no entry left"
