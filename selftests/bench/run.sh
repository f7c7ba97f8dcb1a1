#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# `make bench`: the figures of issues "Data path" and "Export", measured in
# one run with the same settings, printed with their targets. Not a test:
# it exits 0 whatever the figures are, non-zero only when setup fails.
#
#  1. Data path: a gateway nginx proxying to a backend nginx on loopback,
#     loaded by wrk in alternating rounds with the agent off and on.
#     Throughput and p99 ratios (medians of the rounds), BPF run time per
#     request from kernel.bpf_stats_enabled (on rounds only), agent CPU/RSS.
#  2. User-space aggregation capacity (bin/bench_aggregate, one core).
#  3. Export: OTLP encode of a 10k-series store (bin/bench_export) and
#     resident bytes per series, lookup and scrape cost (bin/bench_store);
#     CEL hot-path evaluation cost (bin/bench_cel).
#
# Knobs (environment): BENCH_ROUNDS (off/on pairs, 3), BENCH_DURATION
# (seconds per round, 10), BENCH_THREADS (wrk -t, 1), BENCH_CONNS (wrk -c,
# 50), BENCH_WORKERS (gateway worker_processes, 1), BENCH_EVENTS (synthetic
# events for the aggregation bench, 20000000).

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=$ROOT/bin
PY=/usr/bin/python3

ROUNDS=${BENCH_ROUNDS:-3}
DURATION=${BENCH_DURATION:-10}
THREADS=${BENCH_THREADS:-1}
CONNS=${BENCH_CONNS:-50}
WORKERS=${BENCH_WORKERS:-1}
EVENTS=${BENCH_EVENTS:-20000000}
# Loopback ports apart from the integration tests (28xxx/29xxx) and below
# the ephemeral range (32768+), where a client socket may hold them.
GW_PORT=${BENCH_GW_PORT:-17080}
BE_PORT=${BENCH_BE_PORT:-17081}
AGENT_PORT=${BENCH_AGENT_PORT:-17464}
PIN_DIR=/sys/fs/bpf/milometer
PIN_ARGS=()
URL_PATH=/api/items
HOST=shop.example.com

die() {
	printf 'bench: %s\n' "$*" >&2
	exit 1
}

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

[ "$(id -u)" = 0 ] || die "needs root (BPF, sysctl kernel.bpf_stats_enabled): run sudo make bench"
for t in wrk nginx bpftool ss curl "$PY"; do
	command -v "$t" >/dev/null || die "$t is missing: run make bench as root on Debian 12 (make deps installs it)"
done
for b in milometer bench_aggregate bench_export bench_store bench_cel; do
	[ -x "$BIN/$b" ] || die "$BIN/$b is missing: run make bench, not this script"
done

W=$(mktemp -d /tmp/mm-bench.XXXXXX)
chmod 755 "$W"
AGENT_PID=
STATS_OLD=$(sysctl -n kernel.bpf_stats_enabled)

stop_pid() { # PID: SIGTERM, wait up to 5 s, then SIGKILL
	local pid=$1 i
	kill -TERM "$pid" 2>/dev/null || return 0
	for i in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}

stop_agent() {
	[ -n "$AGENT_PID" ] || return 0
	stop_pid "$AGENT_PID"
	wait "$AGENT_PID" 2>/dev/null || true
	# a clean exit removes the pins; after SIGKILL they would stay
	if [ -d "$PIN_DIR" ] && { [ ${#PIN_ARGS[@]} -gt 0 ] ||
				   ! pgrep -x milometer >/dev/null 2>&1; }; then
		rm -rf "$PIN_DIR"
	fi
	AGENT_PID=
}

cleanup() {
	local rc=$?
	set +e
	[ -n "${WRK_PID:-}" ] && kill "$WRK_PID" 2>/dev/null
	stop_agent
	for p in gw be; do
		[ -s "$W/$p/nginx.pid" ] && stop_pid "$(cat "$W/$p/nginx.pid")"
	done
	sysctl -qw kernel.bpf_stats_enabled="$STATS_OLD"
	if [ "${BENCH_KEEP:-}" ]; then
		log "kept $W"
	else
		rm -rf "$W"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Another agent's programs run in the "off" rounds too (every syscall of
# every process enters them before they filter), so the bench waits a
# little for one started by a test to finish, then goes ahead with a note
# (BENCH_OTHER_AGENT=ok: at once). An agent without --pin-dir would share
# the pin directory with the other one: then the bench does not go ahead.
if "$BIN/milometer" run --help 2>&1 | grep -q -- --pin-dir; then
	PIN_DIR=/sys/fs/bpf/mm-bench
	PIN_ARGS=(--pin-dir "$PIN_DIR")
fi

# pgrep exits 1 when nothing matches: not an error under pipefail
other_agents() { { pgrep -x milometer || true; } | { grep -vx "${AGENT_PID:-0}" || true; } | tr '\n' ' '; }

wait_no_agent() {
	local i others
	[ -n "${NOTED:-}" ] && return 0 # waited once already
	for i in $(seq 120); do
		others=$(other_agents)
		[ -z "$others" ] && return 0
		[ "${BENCH_OTHER_AGENT:-}" = ok ] && break
		[ "$i" = 1 ] && log "another milometer is running (pid $others); waiting up to 60 s"
		sleep 0.5
	done
	[ ${#PIN_ARGS[@]} -gt 0 ] ||
		die "another milometer agent is running (pid $others) and this one has no --pin-dir: they would share $PIN_DIR; stop it first"
	if [ -z "${NOTED:-}" ]; then
		log "note: another milometer (pid $others) is running; its BPF programs run in every round, off and on"
		NOTED=1
	fi
}

port_free() {
	local p
	for p in "$@"; do
		[ -z "$(ss -Hltn "sport = :$p")" ] ||
			die "TCP port $p is in use; stop what holds it or set BENCH_*_PORT"
	done
}

wait_for() { # TIMEOUT_S CMD...: poll; a status of 2 gives up at once
	local end=$(($(date +%s) + $1)) rc
	shift
	while :; do
		rc=0
		"$@" >/dev/null 2>&1 || rc=$?
		[ "$rc" = 0 ] && return 0
		[ "$rc" = 2 ] && return 1
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 0.1
	done
}

subst() { # TEMPLATE OUT
	sed -e "s|@DIR@|$W|g" -e "s|@WORKERS@|$WORKERS|g" \
	    -e "s|@GW_PORT@|$GW_PORT|g" -e "s|@BE_PORT@|$BE_PORT|g" "$1" >"$2"
}

start_nginx() { # NAME TEMPLATE
	mkdir -p "$W/$1"
	subst "$2" "$W/$1/nginx.conf"
	nginx -p "$W/$1" -e "$W/$1/error.log" -c "$W/$1/nginx.conf" ||
		die "nginx ($1) failed to start: see $W/$1/error.log"
	wait_for 5 test -s "$W/$1/nginx.pid" || die "nginx ($1) wrote no pid file"
}

port_free "$GW_PORT" "$BE_PORT" "$AGENT_PORT"
wait_no_agent

# Manifests: the bench gateway and routes, plus the seed's data-plane
# contract (its definitions and the two DataPlane policies; the scenario
# files restate the same metrics and would conflict), so the agent runs its
# policy engine as on a node. bench_aggregate binds the same contract.
CONTRACT_SRC=$ROOT/deploy/examples/contract
CONTRACT_FILES="seed-complete-metricdefinition seed-complete-metricpolicy-dataplane
	seed-scenario-upstream-request-count-metricdefinition
	seed-scenario-upstream-request-count-metricpolicy"
mkdir -p "$W/m" "$W/contract"
cp "$HERE"/manifests/*.yaml "$W/m/"
for f in $CONTRACT_FILES; do
	if [ -f "$CONTRACT_SRC/$f.yaml" ]; then
		cp "$CONTRACT_SRC/$f.yaml" "$W/contract/"
	else
		log "contract example $f.yaml is missing; benching without it"
	fi
done
cp "$W"/contract/*.yaml "$W/m/" 2>/dev/null || true

start_nginx be "$HERE/backend.nginx.conf.in"
start_nginx gw "$HERE/gateway.nginx.conf.in"
GW_PID=$(cat "$W/gw/nginx.pid")
URL=http://127.0.0.1:$GW_PORT$URL_PATH
wait_for 5 curl -sf -H "Host: $HOST" "$URL" || die "the gateway does not answer on $URL"

WRK=(wrk --latency -t"$THREADS" -c"$CONNS" -d"${DURATION}s" -H "Host: $HOST" "$URL")
cat <<EOF
== milometer bench ($(date -u +%FT%TZ), $(uname -r), $(nproc) CPUs, $(git -C "$ROOT" describe --always --dirty 2>/dev/null))
   gateway nginx worker_processes $WORKERS -> backend nginx, loopback
   load: ${WRK[*]}
   $ROUNDS rounds agent off / on alternating, ${DURATION}s each
EOF

agent_ready() {
	kill -0 "$AGENT_PID" 2>/dev/null || return 2
	curl -sf "http://127.0.0.1:$AGENT_PORT/readyz"
}

start_agent() { # N; lists the agent's own BPF programs in $W/ids.N
	wait_no_agent
	"$PY" "$HERE/bpf_stats.py" list >"$W/before.$1" || true
	"$BIN/milometer" run --manifests "$W/m" --proxy-pid "$GW_PID" \
		--prometheus-listen "127.0.0.1:$AGENT_PORT" \
		--socket "$W/mm.sock" "${PIN_ARGS[@]}" >"$W/agent.$1.log" 2>&1 &
	AGENT_PID=$!
	local t0=$(date +%s%N)
	if ! wait_for 60 agent_ready; then
		cat "$W/agent.$1.log" >&2
		die "the agent did not become ready in 60 s (log above)"
	fi
	log "agent ready in $((($(date +%s%N) - t0) / 1000000)) ms"
	"$PY" "$HERE/bpf_stats.py" ids "$W/before.$1" >"$W/ids.$1" ||
		die "the agent's BPF programs (mm_*) are not in bpftool prog show"
}

# In the background so that a signal is handled at once, not after wrk.
run_wrk() {
	"$@" &
	WRK_PID=$!
	wait "$WRK_PID"
	local rc=$?
	WRK_PID=
	return $rc
}

agent_ticks() { # utime + stime, clock ticks
	awk '{ print $14 + $15 }' "/proc/$AGENT_PID/stat"
}

status_kb() { # FIELD
	awk -v f="$1:" '$1 == f { print $2 }' "/proc/$AGENT_PID/status"
}

# One round: wrk output in $W/wrk.N, ground truth requests from the
# gateway's access log; on rounds add BPF stats and agent CPU/RSS.
# Appends "key=value ..." to $W/rounds.
round() { # N off|on|bytes
	local n=$1 mode=$2 l0 l1 t0 t1 extra= cmd=("${WRK[@]}")
	[ "$mode" = bytes ] && cmd=("${WRK_BYTES[@]}")
	if [ "$mode" != off ]; then
		start_agent "$n"
		sysctl -qw kernel.bpf_stats_enabled=1
		"$PY" "$HERE/bpf_stats.py" snap "$W/ids.$n" >"$W/bpf0.$n"
		t0=$(agent_ticks)
	fi
	l0=$(wc -l <"$W/gw/access.log")
	run_wrk "${cmd[@]}" >"$W/wrk.$n" 2>&1 || die "wrk failed: $(cat "$W/wrk.$n")"
	l1=$(wc -l <"$W/gw/access.log")
	if [ "$mode" != off ]; then
		"$PY" "$HERE/bpf_stats.py" snap "$W/ids.$n" >"$W/bpf1.$n"
		t1=$(agent_ticks)
		sysctl -qw kernel.bpf_stats_enabled="$STATS_OLD"
		extra="bpf0=$W/bpf0.$n bpf1=$W/bpf1.$n cpu_s=$(echo "$t0 $t1 $(getconf CLK_TCK)" | awk '{ printf "%.3f", ($2 - $1) / $3 }')"
		extra="$extra rss_kb=$(status_kb VmRSS) hwm_kb=$(status_kb VmHWM)"
		curl -sf "http://127.0.0.1:$AGENT_PORT/metrics" >"$W/metrics.$n" || true
		stop_agent
	fi
	[ "$mode" = bytes ] &&
		extra="$extra extra_bytes=$EXTRA_BYTES head_bytes=$HEAD_BYTES"
	echo "n=$n mode=$mode wrk=$W/wrk.$n requests=$((l1 - l0)) $extra" >>"$W/rounds"
}

# Where the BPF time goes: one more agent-on round whose requests carry
# 16 extra 64-byte headers. nginx forwards them, so each is parsed on both
# legs; the growth of BPF ns/request over 2 x EXTRA_BYTES is the cost per
# parsed byte, the rest of a request's cost is per syscall/hook.
HDRS=()
EXTRA_BYTES=0
for i in $(seq 10 25); do
	v=$(printf '%064d' "$i")
	HDRS+=(-H "X-Bench-$i: $v")
	EXTRA_BYTES=$((EXTRA_BYTES + ${#i} + 8 + 2 + 64 + 2))
done
# Message-head bytes of a normal request, both legs: wrk's request (the
# upstream one is about as long) and the response head (as relayed).
REQ_BYTES=$(printf 'GET %s HTTP/1.1\r\nHost: %s\r\n\r\n' "$URL_PATH" "$HOST" | wc -c)
RESP_BYTES=$(curl -s -o /dev/null -w '%{size_header}' -H "Host: $HOST" "$URL")
HEAD_BYTES=$((2 * REQ_BYTES + 2 * RESP_BYTES))
WRK_BYTES=(wrk --latency -t"$THREADS" -c"$CONNS" -d"${DURATION}s" -H "Host: $HOST"
	"${HDRS[@]}" "$URL")

log "warm-up (3 s, agent off)"
run_wrk wrk -t"$THREADS" -c"$CONNS" -d3s -H "Host: $HOST" "$URL" >/dev/null 2>&1
: >"$W/rounds"
n=0
for r in $(seq "$ROUNDS"); do
	for mode in off on; do
		n=$((n + 1))
		log "round $n: agent $mode"
		round "$n" "$mode"
	done
done
n=$((n + 1))
log "round $n: agent on, $EXTRA_BYTES extra request header bytes (cost per parsed byte)"
round "$n" bytes

# A failing tool is reported after the figures that did come out.
FAILED=
log "aggregation capacity (bin/bench_aggregate, $EVENTS events, one core)"
if ! "$BIN/bench_aggregate" --events "$EVENTS" --contract "$W/contract" \
	>"$W/aggregate" 2>&1; then
	FAILED="$FAILED bench_aggregate"
	sed 's/^/  /' "$W/aggregate" >&2
fi
log "OTLP encode (bin/bench_export)"
if ! "$BIN/bench_export" >"$W/export" 2>&1; then
	FAILED="$FAILED bench_export"
	sed 's/^/  /' "$W/export" >&2
fi
log "memory per series, lookup, scrape (bin/bench_store)"
if ! "$BIN/bench_store" >"$W/memory" 2>&1; then
	FAILED="$FAILED bench_store"
	sed 's/^/  /' "$W/memory" >&2
fi
log "CEL hot-path evaluation (bin/bench_cel)"
if ! "$BIN/bench_cel" >"$W/cel" 2>&1; then
	FAILED="$FAILED bench_cel"
fi
sed 's/^/  /' "$W/cel" >&2

"$PY" "$HERE/report.py" --rounds "$W/rounds" --aggregate "$W/aggregate" \
	--export "$W/export" --memory "$W/memory"
[ -z "$FAILED" ] || die "failed:$FAILED (output above)"
