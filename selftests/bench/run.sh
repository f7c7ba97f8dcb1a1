#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# `make bench`: the figures of issues "Data path cost" and "Export", measured
# in one run with the same settings, printed with their targets and a
# verdict. Not a test: it exits 0 whatever the figures are, non-zero only
# when setup fails. Phases (docs/performance.md says how to read them):
#
#  A. Gateway pair, nginx: a gateway nginx proxying to a backend nginx on
#     loopback under wrk, rounds agent off / on (default capture) / on
#     (--capture sys-exit), kernel.bpf_stats_enabled=0. After each wrk, the
#     node-tax tool (bin/bench_nodetax: 1-byte syscalls of a process that
#     is not the proxy) runs in the same agent state. Interleaved with
#     them, the floors (bin/bench_floor in the agent's place): the socket
#     tracepoints with empty programs, with a process filter and a
#     per-socket state, with each I/O's first 64 bytes read (the least an
#     in-kernel parser does), and with a prefix copy of each I/O into a
#     ring buffer (what agents that parse in user space do in the kernel).
#     Then the same pair at a fixed rate below saturation (h2load over
#     HTTP/1.1, BENCH_RATE req/s on BENCH_RATE_CONNS connections), its
#     latency from every request's own time (h2load --log-file).
#  B. Gateway pair, haproxy (Debian's), rounds off / on / floors,
#     bpf_stats off; then at the fixed rate.
#  C. Per-program figures: rounds with bpf_stats on (nginx, nginx with 16
#     extra request headers, haproxy, nginx with --capture sys-exit).
#  D. Scale: BPF ns/request at 10 / 1 000 / 10 000 keep-alive connections
#     and with 10 / 1 000 / 10 000 HTTPRoutes (bpf_stats on).
#  E. Kernel memory: Slab growth with 10 000 idle keep-alive connections
#     through the gateway, agent off vs on; sizeof(struct mm_conn) from BTF.
#  F. User-space aggregation capacity (bin/bench_aggregate, one core),
#     OTLP encode (bin/bench_export), bytes per series (bin/bench_store),
#     ns per CEL transform (bin/bench_cel).
#  G. BPF cost model: ns per run of each leg of one exchange through the
#     data path's code under BPF_PROG_TEST_RUN, warm, with only code run
#     between runs and with caches evicted (bin/bench_bpf_exchange).
#  T. TLS: the nginx gateway terminating TLS (wrk over https,
#     keep-alive), rounds agent off / on with TLSCapture off (the TLS leg is
#     not read) / on with TLSCapture on (uprobes on SSL_read/SSL_write),
#     bpf_stats off, then one TLSCapture round with bpf_stats on, and the
#     cost of one uprobe hit (bin/bench_uprobe). Then the same listener
#     with HTTP/2 (ALPN h2) under h2load (10 streams per connection):
#     agent off / on with both gates off / on with TLSCapture and HTTP2.
#
# Knobs (environment): BENCH_ROUNDS (pairs in A and B, 3), BENCH_DURATION
# (seconds per round in A-C, 5), BENCH_SCALE_DURATION (seconds per scale
# round, 5), BENCH_THREADS (wrk -t, 1), BENCH_CONNS (wrk -c, 50),
# BENCH_RATE (req/s of the fixed-rate rounds, 10000), BENCH_RATE_CONNS (10),
# BENCH_RATE_FLOORS (floors beside them, "floor-read"),
# BENCH_WORKERS (nginx worker_processes, 1), BENCH_SCALE_CONNS ("10 1000
# 10000"), BENCH_SCALE_ROUTES ("10 1000 10000"), BENCH_MEM_CONNS (10000),
# BENCH_NODETAX_REPS (50), BENCH_EVENTS (aggregation events, 20000000),
# BENCH_PHASES (which phases to run, "ABCDEFGT"), BENCH_FLOORS (the floor
# levels of phases A and B, "floor-empty floor-hook floor-read floor-copy";
# empty: none).

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=$ROOT/bin
PY=/usr/bin/python3

ROUNDS=${BENCH_ROUNDS:-3}
DURATION=${BENCH_DURATION:-5}
SCALE_DURATION=${BENCH_SCALE_DURATION:-5}
THREADS=${BENCH_THREADS:-1}
CONNS=${BENCH_CONNS:-50}
RATE_RQ=${BENCH_RATE:-10000}
RATE_CONNS=${BENCH_RATE_CONNS:-10}
WORKERS=${BENCH_WORKERS:-1}
SCALE_CONNS=${BENCH_SCALE_CONNS:-10 1000 10000}
SCALE_ROUTES=${BENCH_SCALE_ROUTES:-10 1000 10000}
SCALE_GATEWAYS=${BENCH_SCALE_GATEWAYS:-nginx haproxy}
MEM_CONNS=${BENCH_MEM_CONNS:-10000}
NODETAX_REPS=${BENCH_NODETAX_REPS:-50}
EVENTS=${BENCH_EVENTS:-20000000}
PHASES=${BENCH_PHASES:-PCDEFGT}
# the floor levels run beside the agent in phases A and B (bench_floor.c)
FLOORS=${BENCH_FLOORS-floor-empty floor-hook floor-read floor-copy}
# and beside the fixed-rate rounds: the least an in-kernel parser does
RATE_FLOORS=${BENCH_RATE_FLOORS-floor-read}
# phase P (the peers' method): see below
PEER_ROUNDS=${BENCH_PEER_ROUNDS:-6}
PEER_DURATION=${BENCH_PEER_DURATION:-3}
PEER_LOADS=${BENCH_PEER_LOADS:-30 60}
PEER_CONNS=${BENCH_PEER_CONNS:-50}
PEER_SLOTS=${BENCH_PEER_SLOTS-off floor-empty floor-hook floor-read floor-skb auto}
# BENCH_AGENT_BASELINE=PATH: a second agent binary, slot "baseline", in the
# same rounds (agent - baseline, paired, in the summary)
if [ -n "${BENCH_AGENT_BASELINE:-}" ]; then
	[ -x "$BENCH_AGENT_BASELINE" ] || {
		echo "BENCH_AGENT_BASELINE=$BENCH_AGENT_BASELINE: not an executable" >&2
		exit 2
	}
	case " $PEER_SLOTS " in *" baseline "*) ;; *) PEER_SLOTS="$PEER_SLOTS baseline" ;; esac
fi
PEER_GATEWAYS=${BENCH_PEER_GATEWAYS:-nginx haproxy}
PEER_SAT_DURATION=${BENCH_PEER_SAT_DURATION:-5}
PEER_NODETAX_REPS=${BENCH_PEER_NODETAX_REPS:-10}
# ping-pongs per repetition: 10 000 (~45 ms) rather than phase A's 1 000;
# in two runs of 6 rounds the agent-minus-empty-floor interval narrowed
# from 265 to 173 ns wide
PEER_NODETAX_TCP=${BENCH_PEER_NODETAX_TCP:-10000}
# bpf_stats rounds of the slots (rotated like the others): > 1 gives BPF
# ns per request an interval
PEER_STATS_ROUNDS=${BENCH_PEER_STATS_ROUNDS:-3}
# Loopback ports apart from the integration tests (28xxx/29xxx) and below
# the ephemeral range (32768+), where a client socket may hold them.
GW_PORT=${BENCH_GW_PORT:-17080}
BE_PORT=${BENCH_BE_PORT:-17081}
HA_PORT=${BENCH_HA_PORT:-17082}
TLS_PORT=${BENCH_TLS_PORT:-17443}
H2_PORT=${BENCH_H2_PORT:-17444}
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

phase() { [[ $PHASES == *"$1"* ]]; }
[ "$RATE_RQ" -ge "$RATE_CONNS" ] 2>/dev/null ||
	die "BENCH_RATE ($RATE_RQ) must be a number of requests per second, at least BENCH_RATE_CONNS ($RATE_CONNS)"

[ "$(id -u)" = 0 ] || die "needs root (BPF, sysctl kernel.bpf_stats_enabled): run sudo make bench"
for t in wrk h2load nginx haproxy bpftool ss curl "$PY"; do
	command -v "$t" >/dev/null || die "$t is missing: run make bench as root on Debian 12 (make deps installs it)"
done
for b in milometer bench_aggregate bench_export bench_nodetax bench_store bench_cel bench_bpf_exchange bench_uprobe bench_floor; do
	[ -x "$BIN/$b" ] || die "$BIN/$b is missing: run make bench, not this script"
done
# 10 000 client connections (wrk, idle_conns.py), as many at the gateway
# plus its upstream ones; haproxy takes two descriptors a connection. Root
# raises the hard limit to 65 536 where fs.nr_open allows (a container
# without CAP_SYS_RESOURCE cannot: then as many as its hard limit allows).
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt 65536 ]; then
	ulimit -Hn 65536 2>/dev/null ||
		log "note: cannot raise the hard open-file limit $(ulimit -Hn) to 65 536 (no CAP_SYS_RESOURCE, or fs.nr_open)"
fi
ulimit -n "$(ulimit -Hn)" || die "cannot raise the open-file limit (ulimit -n) to the hard limit $(ulimit -Hn)"
NOFILE=$(ulimit -n)
[ "$NOFILE" = unlimited ] && NOFILE=1048576
[ "$NOFILE" -ge 12000 ] ||
	log "note: open files limited to $NOFILE (ulimit -Hn): 10 000-connection rows will fail connections"
# haproxy's maxconn: two descriptors a connection, and room for 10 000
HA_MAXCONN=$(((NOFILE - 1000) / 2 < 10100 ? (NOFILE - 1000) / 2 : 10100))
[ "$HA_MAXCONN" -ge 200 ] || HA_MAXCONN=200

W=$(mktemp -d /tmp/mm-bench.XXXXXX)
chmod 755 "$W"
AGENT_PID=
HA_PID=
IDLE_PID=
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

stop_idle() {
	[ -n "$IDLE_PID" ] || return 0
	exec 7>&- 2>/dev/null || true # stdin EOF: it closes its connections
	stop_pid "$IDLE_PID"
	wait "$IDLE_PID" 2>/dev/null || true
	IDLE_PID=
}

cleanup() {
	local rc=$?
	set +e
	[ -n "${WRK_PID:-}" ] && kill "$WRK_PID" 2>/dev/null
	stop_idle
	stop_agent
	[ -n "$HA_PID" ] && stop_pid "$HA_PID"
	for p in gw be; do
		[ -s "$W/$p/nginx.pid" ] && stop_pid "$(cat "$W/$p/nginx.pid")"
	done
	sysctl -qw kernel.bpf_stats_enabled="$STATS_OLD"
	[ -n "${AGENT_CG:-}" ] && rmdir "$AGENT_CG" 2>/dev/null
	gw_cgroup_remove
	if [ "${BENCH_KEEP:-}" ]; then
		log "kept $W"
	else
		rm -rf "$W"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Another agent's programs run in the "off" rounds too (every socket I/O,
# or every syscall, enters them before they filter), so the bench waits a
# little for one started by a test to finish (by its loaded mm_* programs:
# a test's agent has another executable name), then goes ahead with a note
# (BENCH_OTHER_AGENT=ok: at once). An agent without --pin-dir would share
# the pin directory with the other one: then the bench does not go ahead.
if "$BIN/milometer" run --help 2>&1 | grep -q -- --pin-dir; then
	PIN_DIR=/sys/fs/bpf/mm-bench
	PIN_ARGS=(--pin-dir "$PIN_DIR")
fi

# pgrep exits 1 when nothing matches: not an error under pipefail
other_agents() {
	local p
	# agents only (milometer run): a controller or ctl loads no BPF
	p=$(for q in $(pgrep -x milometer || true); do
		if [ "$q" != "${AGENT_PID:-0}" ] &&
			[ "$(tr '\0' '\n' <"/proc/$q/cmdline" 2>/dev/null | sed -n 2p)" = run ]; then
			echo "$q"
		fi
	done | tr '\n' ' ')
	if [ -z "$p" ] && [ -z "$AGENT_PID" ] &&
	   [ -n "$("$PY" "$HERE/bpf_stats.py" list 2>/dev/null)" ]; then
		p="(mm_* BPF programs of another agent are loaded)"
	fi
	echo "$p"
}

wait_no_agent() {
	local i others
	[ -n "${NOTED:-}" ] && return 0 # waited once already
	for i in $(seq 120); do
		others=$(other_agents)
		[ -z "$others" ] && return 0
		[ "${BENCH_OTHER_AGENT:-}" = ok ] && break
		[ "$i" = 1 ] && log "another milometer is running ($others); waiting up to 60 s"
		sleep 0.5
	done
	[ ${#PIN_ARGS[@]} -gt 0 ] ||
		die "another milometer agent is running ($others) and this one has no --pin-dir: they would share $PIN_DIR; stop it first"
	log "note: another milometer ($others) is running; its BPF programs run in every round, off and on"
	echo "other_agent=1" >>"$W/notes"
	NOTED=1
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

# ready_line FILE PID: FILE has its "ready" line (0); not yet (1), also
# while the background process has not opened FILE (grep's own 2 would make
# wait_for give up at once); PID gone without it (2)
ready_line() {
	grep -q '^ready' "$1" 2>/dev/null && return 0
	kill -0 "$2" 2>/dev/null || return 2
	return 1
}

subst() { # TEMPLATE OUT
	sed -e "s|@DIR@|$W|g" -e "s|@WORKERS@|$WORKERS|g" -e "s|@NOFILE@|$NOFILE|g" \
	    -e "s|@CONNS@|$((NOFILE - 500))|g" \
	    -e "s|@GW_PORT@|$GW_PORT|g" -e "s|@BE_PORT@|$BE_PORT|g" \
	    -e "s|@HA_PORT@|$HA_PORT|g" -e "s|@TLS_PORT@|$TLS_PORT|g" \
	    -e "s|@H2_PORT@|$H2_PORT|g" -e "s|@HA_MAXCONN@|$HA_MAXCONN|g" "$1" >"$2"
}

# The skb floor runs on the gateways' own cgroup v2: a child of wherever
# cgroup2 is mounted, the gateways started in it. A socket belongs to the
# cgroup of the process that made it (an accepted one to its listener's):
# moving a running gateway would leave its listeners, and every client
# connection, outside.
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
GW_CG=
gw_cgroup_make() {
	[ -n "$CG2" ] || return 1
	mkdir -p "$CG2/mm-bench-gw-$$" || return 1
	GW_CG=$CG2/mm-bench-gw-$$
}
in_gw_cgroup() { # CMD...: run CMD in the gateways' cgroup (if there is one)
	sh -c '[ -z "$1" ] || echo $$ >"$1/cgroup.procs" || exit 1; shift; exec "$@"' sh "$GW_CG" "$@"
}
gw_cgroup_remove() {
	local p
	[ -n "$GW_CG" ] || return 0
	for p in $(cat "$GW_CG/cgroup.procs" 2>/dev/null); do
		echo "$p" >"$CG2/cgroup.procs" 2>/dev/null
	done
	rmdir "$GW_CG" 2>/dev/null
	GW_CG=
}

start_nginx() { # NAME TEMPLATE
	mkdir -p "$W/$1"
	subst "$2" "$W/$1/nginx.conf"
	local run=()
	[ "$1" = gw ] && run=(in_gw_cgroup)
	"${run[@]}" nginx -p "$W/$1" -e "$W/$1/error.log" -c "$W/$1/nginx.conf" ||
		die "nginx ($1) failed to start: see $W/$1/error.log"
	wait_for 5 test -s "$W/$1/nginx.pid" || die "nginx ($1) wrote no pid file"
}

start_haproxy() {
	mkdir -p "$W/ha"
	subst "$HERE/gateway.haproxy.cfg.in" "$W/ha/haproxy.cfg"
	haproxy -c -q -f "$W/ha/haproxy.cfg" ||
		die "haproxy rejects $W/ha/haproxy.cfg (from gateway.haproxy.cfg.in)"
	# not through the function: HA_PID must be haproxy's own PID
	sh -c '[ -z "$1" ] || echo $$ >"$1/cgroup.procs" || exit 1; shift; exec "$@"' sh "$GW_CG" haproxy -db -f "$W/ha/haproxy.cfg" >"$W/ha/access.log" 2>"$W/ha/error.log" &
	HA_PID=$!
}

port_free "$GW_PORT" "$BE_PORT" "$HA_PORT" "$TLS_PORT" "$H2_PORT" "$AGENT_PORT"
: >"$W/notes"
# what was run: report.py names what a missing row was not measured for
echo "phases=$PHASES scale_gateways=${SCALE_GATEWAYS// /,} scale_conns=${SCALE_CONNS// /,}" >>"$W/notes"
wait_no_agent

# Manifests: the bench gateway and routes, plus the seed's data-plane
# contract (its definitions and the two DataPlane policies; the scenario
# files restate the same metrics and would conflict), so the agent runs its
# policy engine as on a node. bench_aggregate binds the same contract.
# The "complete" files are the scenario's twins, kept with the unit tests'
# data (a user applies deploy/examples/contract without them).
CONTRACT_SRC="$ROOT/deploy/examples/contract $ROOT/selftests/unit/testdata/contract/seed-twins"
CONTRACT_FILES="seed-complete-metricdefinition seed-complete-metricpolicy-dataplane
	seed-scenario-upstream-request-count-metricdefinition
	seed-scenario-upstream-request-count-metricpolicy"
mkdir -p "$W/m" "$W/contract"
cp "$HERE"/manifests/*.yaml "$W/m/"
for f in $CONTRACT_FILES; do
	found=
	for d in $CONTRACT_SRC; do
		[ -f "$d/$f.yaml" ] || continue
		cp "$d/$f.yaml" "$W/contract/"
		found=1
		break
	done
	[ -n "$found" ] || die "contract file $f.yaml is in none of: $CONTRACT_SRC"
done
cp "$W"/contract/*.yaml "$W/m/" 2>/dev/null || true
# the same with a second listener on the Gateway (the slot "listeners")
mkdir -p "$W/mL"
cp "$W"/m/*.yaml "$W/mL/"
sed -i '0,/^          from: All$/s//          from: All\n    - name: http-alt\n      protocol: HTTP\n      port: 8080\n      allowedRoutes:\n        namespaces:\n          from: All/' "$W/mL/gateway.yaml"

# the gateway's TLS listener (phase T): a certificate made here
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=milometer-bench \
	-keyout "$W/tls.key" -out "$W/tls.crt" 2>/dev/null ||
	die "openssl could not make the TLS listener's certificate"
if [[ $PHASES == *P* ]] && [[ $PEER_SLOTS == *floor-skb* ]] && ! gw_cgroup_make; then
	log "note: no cgroup v2 to start the gateways in (${CG2:-not mounted}): the skb floor is not measured"
	echo "no_skb=1" >>"$W/notes"
	PEER_SLOTS=${PEER_SLOTS//floor-skb/}
fi
start_nginx be "$HERE/backend.nginx.conf.in"
start_nginx gw "$HERE/gateway.nginx.conf.in"
start_haproxy
GW_PID=$(cat "$W/gw/nginx.pid")
url() { # GATEWAY
	if [ "$1" = haproxy ]; then
		echo "http://127.0.0.1:$HA_PORT$URL_PATH"
	elif [ "$1" = nginx-tls ]; then
		echo "https://127.0.0.1:$TLS_PORT$URL_PATH"
	elif [ "$1" = nginx-h2 ]; then
		echo "https://127.0.0.1:$H2_PORT$URL_PATH"
	else
		echo "http://127.0.0.1:$GW_PORT$URL_PATH"
	fi
}
for g in nginx haproxy nginx-tls nginx-h2; do
	wait_for 5 curl -ksf -H "Host: $HOST" "$(url $g)" ||
		die "the $g gateway does not answer on $(url $g) (logs in $W, BENCH_KEEP=1 keeps them)"
done

cat <<EOF
== milometer bench ($(date -u +%FT%TZ), $(uname -r), $(nproc) CPUs, $(git -C "$ROOT" describe --always --dirty 2>/dev/null))
   gateways: nginx (worker_processes $WORKERS) or haproxy (nbthread 1) -> backend nginx, loopback
   load: wrk --latency -t$THREADS -c$CONNS -d${DURATION}s -H 'Host: $HOST' $(url nginx)
   $ROUNDS rounds per gateway pair, ${DURATION}s each; scale rounds ${SCALE_DURATION}s; phases $PHASES
EOF

# The hardware fingerprint: figures of runs whose lines differ are not
# compared (report.py, BENCH_COMPARE=previous results JSON).
"$PY" "$HERE/fingerprint.py" "$W/fingerprint.json" || die "fingerprint.py failed"
RESULTS=${BENCH_RESULTS:-$ROOT/.output/bench-results.json}
COMPARE=()
if [ -n "${BENCH_COMPARE:-}" ]; then
	[ -r "$BENCH_COMPARE" ] || die "BENCH_COMPARE=$BENCH_COMPARE: no such results file"
	"$PY" "$HERE/fingerprint.py" --diff "$BENCH_COMPARE" <(echo '{"fingerprint":'; cat "$W/fingerprint.json"; echo '}') >"$W/fpdiff" ||
		die "refusing to compare with $BENCH_COMPARE: measured on other hardware:
$(cat "$W/fpdiff")"
	COMPARE=(--compare "$BENCH_COMPARE")
fi

agent_ready() {
	kill -0 "$AGENT_PID" 2>/dev/null || return 2
	curl -sf "http://127.0.0.1:$AGENT_PORT/readyz"
}

# start_agent TAG CAPTURE MANIFESTS PROXY_PID: lists the agent's own BPF
# programs in $W/ids.TAG. CAPTURE: auto, sys-exit, or tls (auto with the
# TLSCapture gate on).
start_agent() {
	local tag=$1 capture=$2 mdir=$3 pid=$4 cap=() bin=$BIN/milometer
	case $capture in
	auto) ;;
	# another build of the agent (BENCH_AGENT_BASELINE), as auto
	baseline) bin=$BENCH_AGENT_BASELINE ;;
	tls) cap=(--feature-gates=TLSCapture=true) ;;
	# the Gateway with a second listener (port 8080), so that the kernel
	# table carries listener ports: mdir is $W/mL, the socket port of
	# listener 80 in LISTEN_SPORT
	listeners) cap=(--listener-port "80=$LISTEN_SPORT") ;;
	h2) cap=(--feature-gates=TLSCapture=true,HTTP2=true) ;;
	*) cap=(--capture "$capture") ;;
	esac
	wait_no_agent
	"$PY" "$HERE/bpf_stats.py" list >"$W/before.$tag" || true
	# in AGENT_CG (phase E) from its first instruction: the maps it makes
	# are charged there, and with them every socket's storage
	sh -c '[ -z "$1" ] || echo $$ >"$1/cgroup.procs" || exit 1; shift; exec "$@"' \
		sh "${AGENT_CG:-}" \
		"$bin" run --manifests "$mdir" --proxy-pid "$pid" \
		--prometheus-listen "127.0.0.1:$AGENT_PORT" "${cap[@]}" \
		--socket "$W/mm.sock" "${PIN_ARGS[@]}" >"$W/agent.$tag.log" 2>&1 &
	AGENT_PID=$!
	local t0
	t0=$(date +%s%N)
	if ! wait_for 120 agent_ready; then
		cat "$W/agent.$tag.log" >&2
		die "the agent did not become ready in 120 s (log above)"
	fi
	log "agent ready in $((($(date +%s%N) - t0) / 1000000)) ms ($(grep -o 'capture mode [a-z-]*' "$W/agent.$tag.log" | head -1))"
	"$PY" "$HERE/bpf_stats.py" ids "$W/before.$tag" >"$W/ids.$tag" ||
		die "the agent's BPF programs (mm_*) are not in bpftool prog show"
}

# start_floor TAG LEVEL GATEWAY: bin/bench_floor (empty, hook, read, copy) in the
# agent's place, on the gateway's processes: what the attach point, a
# per-socket state, a read of each I/O's first bytes and a prefix copy
# cost without milometer's own work.
start_floor() {
	local tag=$1 level=$2 pids
	if [ "$3" = haproxy ]; then pids=$HA_PID; else pids="$GW_PID $(pgrep -P "$GW_PID" | tr '\n' ' ')"; fi
	# the skb floor: on the gateways' cgroup, both gateways' packets
	[ "$level" = skb ] && pids=$GW_CG
	"$PY" "$HERE/bpf_stats.py" list >"$W/before.$tag" || true
	# shellcheck disable=SC2086 # one argument per PID
	"$BIN/bench_floor" "$level" $pids >"$W/floor.$tag" 2>&1 &
	AGENT_PID=$!
	wait_for 30 ready_line "$W/floor.$tag" "$AGENT_PID" ||
		die "bin/bench_floor $level did not attach: $(cat "$W/floor.$tag")"
	"$PY" "$HERE/bpf_stats.py" ids "$W/before.$tag" >"$W/ids.$tag" ||
		die "bin/bench_floor's BPF programs (fl_*) are not in bpftool prog show"
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

# TCP connections opened by connect() on this machine (/proc/net/snmp
# ActiveOpens): over a round, the gateway's upstream connects and any
# client reconnects
tcp_opens() { awk '$1 == "Tcp:" && $6 ~ /^[0-9]+$/ { print $6 }' /proc/net/snmp; }

# CPU time the hypervisor gave other guests (/proc/stat steal), clock ticks:
# rounds with much of it measured a slower machine, not the agent
steal_ticks() { awk '$1 == "cpu" { print $9 }' /proc/stat; }

agent_ticks() { # utime + stime, clock ticks
	awk '{ print $14 + $15 }' "/proc/$AGENT_PID/stat"
}

status_kb() { # FIELD
	awk -v f="$1:" '$1 == f { print $2 }' "/proc/$AGENT_PID/status"
}

proxy_pid() { # GATEWAY: what the agent is told to trace
	if [ "$1" = haproxy ]; then echo "$HA_PID"; else echo "$GW_PID"; fi
}

access_log() { # GATEWAY
	if [ "$1" = haproxy ]; then echo "$W/ha/access.log"; else echo "$W/gw/access.log"; fi
}

# Read+write syscalls of the gateway's serving processes (/proc/PID/io
# syscr + syscw): the proxy's syscalls per request for the cost model.
proxy_io() { # GATEWAY
	local pids p
	if [ "$1" = haproxy ]; then pids=$HA_PID; else pids=$(pgrep -P "$GW_PID" | tr '\n' ' '); fi
	for p in $pids; do
		awk '$1 == "syscr:" || $1 == "syscw:" { s += $2 } END { print s }' "/proc/$p/io"
	done | awk '{ s += $1 } END { print s + 0 }'
}

# CPU ticks (utime + stime) of the gateway's serving processes and of the
# backend's: CPU per request does not move with what other tenants of the
# machine take, throughput does.
ticks() { # PID...
	local p
	for p in "$@"; do awk '{ print $14 + $15 }' "/proc/$p/stat"; done |
		awk '{ s += $1 } END { print s + 0 }'
}
gw_ticks() { # GATEWAY
	if [ "$1" = haproxy ]; then ticks "$HA_PID"; else ticks $(pgrep -P "$GW_PID"); fi
}
be_ticks() { ticks $(pgrep -P "$(cat "$W/be/nginx.pid")"); }

# proxy_perf GATEWAY CAPTURE SECONDS OUT: sleeps SECONDS while perf counts
# the socket I/O (sock tracepoints) of the gateway's serving processes; in
# sys-exit rounds also their syscalls (raw_syscalls:sys_exit: not in the
# other rounds, it would put every task on the slow syscall path). Without
# perf, just sleeps.
proxy_perf() {
	local pids ev=sock:sock_recv_length,sock:sock_send_length
	[ "$2" = sys-exit ] && ev=$ev,raw_syscalls:sys_exit
	if [ "$1" = haproxy ]; then pids=$HA_PID; else pids=$(pgrep -P "$GW_PID" | paste -sd,); fi
	if ! command -v perf >/dev/null ||
	   ! perf stat -x, -o "$4" -e "$ev" -p "$pids" -- sleep "$3" 2>/dev/null; then
		: >"$4"
		sleep "$3"
	fi
}

# The node tax, in whatever agent state the caller left: 1-byte syscalls of
# a process that is not the proxy (bin/bench_nodetax).
# many short repetitions: the fastest is the one no other tenant disturbed
NODETAX_ZERO=${BENCH_NODETAX_ZERO:-10000}
NODETAX_TCP=${BENCH_NODETAX_TCP:-1000}
nodetax() { # CAPTURE (off, auto, sys-exit)
	local kind iter out
	for kind in zero tcp; do
		iter=$NODETAX_ZERO
		[ "$kind" = tcp ] && iter=$NODETAX_TCP
		out=$("$BIN/bench_nodetax" "$kind" "$iter" "$NODETAX_REPS") ||
			die "bin/bench_nodetax $kind failed"
		echo "capture=$1 kind=$kind $(echo "$out" | tr ' \n' '= ')" >>"$W/nodetax"
	done
}

estab() { # PORT: established TCP connections accepted on PORT
	ss -Htn state established "( sport = :$1 )" | wc -l
}

gw_port() {
	case $1 in
	haproxy) echo "$HA_PORT" ;;
	nginx-tls) echo "$TLS_PORT" ;;
	nginx-h2) echo "$H2_PORT" ;;
	*) echo "$GW_PORT" ;;
	esac
}

# Rounds with bpf_stats on measure a window of the load, not all of it:
# wrk runs longer, the window opens once its connections are all
# established (10 000 take seconds to connect; their setup is not the
# per-request cost) and lasts DURATION seconds, then wrk is stopped.
window_open() { # PORT CONNS: poll (0.5 s: ss over 10 000 sockets is not free)
	local i
	for i in $(seq 120); do
		[ "$(estab "$1")" -ge "$2" ] && return 0
		kill -0 "$WRK_PID" 2>/dev/null || return 1
		sleep 0.5
	done
	log "only $(estab "$1") of $2 connections established after 60 s; measuring anyway"
}

# round TAG GATEWAY CAPTURE STATS CONNS DURATION MANIFESTS [WRK ARGS...]
# One round: wrk output in $W/wrk.TAG, ground truth requests from the
# gateway's access log; agent rounds add agent CPU/RSS, stats rounds the
# BPF programs' run time and count over the window. Appends "key=value
# ..." to $W/rounds.
round() {
	local tag=$1 gw=$2 capture=$3 stats=$4 conns=$5 dur=$6 mdir=$7 l0 l1 o0 o1 t0 t1 io0 io1
	local extra="" log wdur=$6 threads=$THREADS g0 g1 b0 b1 s0 t_start
	shift 7
	log=$(access_log "$gw")
	[ "$threads" -le "$conns" ] || threads=$conns
	[ "$stats" = 1 ] && wdur=$((dur + 90))
	local cmd=(wrk --latency --timeout 30s -t"$threads" -c"$conns" -d"${wdur}s" -H "Host: $HOST" "$@" "$(url "$gw")")
	# a fixed rate (RATE req/s in all): h2load over HTTP/1.1, each request's
	# latency in $W/lat.TAG (wrk has no fixed-rate mode)
	[ -z "${RATE:-}" ] ||
		cmd=(h2load --h1 -t1 -c"$conns" --rps="$((RATE / conns))" -D "$wdur" --log-file="$W/lat.$tag" -H ":authority: $HOST" "$@" "$(url "$gw")")
	# HTTP/2: h2load, 10 concurrent streams per connection
	[ "$gw" != nginx-h2 ] ||
		cmd=(h2load -t"$threads" -c"$conns" -m 10 -D "$wdur" -H ":authority: $HOST" "$@" "$(url "$gw")")
	log "round $tag: $gw, agent ${capture/auto/on}, bpf_stats $stats, ${RATE:+$RATE req/s, }${cmd[0]} -c$conns ${dur}s"
	sysctl -qw kernel.bpf_stats_enabled=0
	case $capture in
	off) ;;
	floor-*) start_floor "$tag" "${capture#floor-}" "$gw" ;;
	*) start_agent "$tag" "$capture" "$mdir" "$(proxy_pid "$gw")" ;;
	esac
	if [ "$stats" = 1 ]; then
		"${cmd[@]}" >"$W/wrk.$tag" 2>&1 &
		WRK_PID=$!
		window_open "$(gw_port "$gw")" "$conns" || die "wrk failed: $(cat "$W/wrk.$tag")"
		sysctl -qw kernel.bpf_stats_enabled=1
		"$PY" "$HERE/bpf_stats.py" snap "$W/ids.$tag" >"$W/bpf0.$tag"
	fi
	[ "$capture" = off ] || t0=$(agent_ticks)
	io0=$(proxy_io "$gw")
	g0=$(gw_ticks "$gw")
	b0=$(be_ticks)
	l0=$(wc -l <"$log")
	o0=$(tcp_opens)
	s0=$(steal_ticks)
	t_start=$(date +%s%N)
	if [ "$stats" = 1 ]; then
		# the measuring window; perf counts the proxy's own socket I/O
		# (sys_exit rounds: syscalls) for the cost model
		proxy_perf "$gw" "$capture" "$dur" "$W/perf.$tag"
		l1=$(wc -l <"$log")
		o1=$(tcp_opens)
		io1=$(proxy_io "$gw")
		g1=$(gw_ticks "$gw")
		b1=$(be_ticks)
		"$PY" "$HERE/bpf_stats.py" snap "$W/ids.$tag" >"$W/bpf1.$tag"
		sysctl -qw kernel.bpf_stats_enabled=0
		kill -INT "$WRK_PID" 2>/dev/null || true
		wait "$WRK_PID" || true
		WRK_PID=
		extra="bpf0=$W/bpf0.$tag bpf1=$W/bpf1.$tag window_s=$dur perf=$W/perf.$tag"
	else
		run_wrk "${cmd[@]}" >"$W/wrk.$tag" 2>&1 || die "wrk failed: $(cat "$W/wrk.$tag")"
		l1=$(wc -l <"$log")
		o1=$(tcp_opens)
		io1=$(proxy_io "$gw")
		g1=$(gw_ticks "$gw")
		b1=$(be_ticks)
	fi
	extra="$extra steal_ticks=$(($(steal_ticks) - s0)) wall_ms=$((($(date +%s%N) - t_start) / 1000000))"
	if [ "$capture" != off ]; then
		t1=$(agent_ticks)
		extra="$extra cpu_s=$(echo "$t0 $t1 $(getconf CLK_TCK)" | awk '{ printf "%.3f", ($2 - $1) / $3 }')"
		extra="$extra rss_kb=$(status_kb VmRSS) hwm_kb=$(status_kb VmHWM)"
		[[ $capture == floor-* ]] ||
			curl -sf "http://127.0.0.1:$AGENT_PORT/metrics" >"$W/metrics.$tag" || true
	fi
	# the node tax in the same agent state, after the gateway's load
	[ -n "${NODETAX:-}" ] && nodetax "$capture"
	stop_agent
	[ -z "${RATE:-}" ] || extra="$extra rate=$RATE lat=$W/lat.$tag"
	echo "tag=$tag gw=$gw capture=$capture stats=$stats conns=$conns routes=${ROUTES:-2} wrk=$W/wrk.$tag requests=$((l1 - l0)) tcp_opens=$((o1 - o0)) proxy_io=$((io1 - io0)) gw_ticks=$((g1 - g0)) be_ticks=$((b1 - b0)) tck=$(getconf CLK_TCK) $extra" >>"$W/rounds"
}

# rate_rounds TAG GATEWAY: the pair again at a fixed rate below saturation
rate_rounds() {
	local r c
	log "phase ${1#R}: the same pair at a fixed rate of $RATE_RQ req/s (h2load)"
	for r in $(seq "$ROUNDS"); do
		for c in off auto $RATE_FLOORS; do
			RATE=$RATE_RQ round "$1$r-$c" "$2" "$c" 0 "$RATE_CONNS" "$DURATION" "$W/m"
		done
	done
}

warm() { # GATEWAY: 2 s of load (WRK_CONNS connections, else CONNS), agent off
	run_wrk wrk -t"$THREADS" -c"${WRK_CONNS:-$CONNS}" -d2s -H "Host: $HOST" "$(url "$1")" >/dev/null 2>&1
}

: >"$W/rounds"
: >"$W/peers"
: >"$W/nodetax"
: >"$W/memory_k"

# --- P: the peers' method ------------------------------------------------
# Capacity with the agent off (wrk, saturation), then fixed open-loop rates
# (bin/loadgen) at PEER_LOADS % of it, rotating the slots (agent off, the
# floors, the agent) in an order that shifts by one each round, so that
# drift of the shared machine falls on every slot alike; report.py pairs
# each slot with agent off of the same round. Per slot: the gateway's CPU
# (utime+stime of its serving processes), the node's (/proc/stat non-idle,
# steal apart), the agent's user-space CPU, loadgen's latency and counts,
# the access log's count, a non-proxy process's 1-byte TCP ping-pong.

# /proc/stat "cpu": non-idle ticks (user nice system irq softirq) and steal
node_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8, $9 }' /proc/stat; }
agent_uticks() { awk '{ print $14 }' "/proc/$AGENT_PID/stat"; }
# its on-CPU ns, user and system (schedstat): utime's 10 ms ticks are
# several us a request over a slot, more than the figure
agent_ns() { cat /proc/"$AGENT_PID"/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
# the same CPU time as utime+stime in ns (schedstat: on-CPU time of each
# thread): at a few thousand requests a round, one 10 ms tick is ~1 us a
# request, as much as the figure measured
gw_ns() { # GATEWAY
	local p
	if [ "$1" = haproxy ]; then p=$HA_PID; else p=$(pgrep -P "$GW_PID" | tr '\n' ' '); fi
	# shellcheck disable=SC2086 # one path per PID
	cat $(for x in $p; do echo /proc/$x/task/*/schedstat; done) | awk '{ s += $1 } END { printf "%.0f\n", s }'
}
gw_pids() { # GATEWAY: every process of it (pinning, the cgroup)
	if [ "$1" = haproxy ]; then echo "$HA_PID"; else echo "$GW_PID $(pgrep -P "$GW_PID" | tr '\n' ' ')"; fi
}

# peer_slot TAG GATEWAY CAPTURE RATE LOAD ROUND STATS: one slot at a fixed
# rate; a line of "key=value" in $W/peers
peer_slot() {
	local tag=$1 gw=$2 capture=$3 rate=$4 load=$5 rnd=$6 stats=$7
	local log g0 g1 q0 q1 n0 n1 s0 s1 a0=0 a1=0 an0=0 an1=0 l0 l1 t0 nt=- extra=
	log=$(access_log "$gw")
	case $capture in
	off) ;;
	floor-*) start_floor "$tag" "${capture#floor-}" "$gw" ;;
	listeners) LISTEN_SPORT=$(gw_port "$gw") start_agent "$tag" "$capture" "$W/mL" "$(proxy_pid "$gw")" ;;
	*) start_agent "$tag" "$capture" "$W/m" "$(proxy_pid "$gw")" ;;
	esac
	if [ "$stats" = 1 ]; then
		sysctl -qw kernel.bpf_stats_enabled=1
		"$PY" "$HERE/bpf_stats.py" snap "$W/ids.$tag" >"$W/bpf0.$tag"
	fi
	[ "$capture" = off ] || { a0=$(agent_uticks); an0=$(agent_ns); }
	g0=$(gw_ticks "$gw")
	q0=$(gw_ns "$gw")
	read -r n0 s0 < <(node_ticks)
	l0=$(wc -l <"$log")
	t0=$(date +%s%N)
	"$BIN/loadgen" -c "$PEER_CONNS" -r "$rate" -d "$PEER_DURATION" \
		-H "Host: $HOST" -o json "$(url "$gw")" >"$W/lg.$tag" 2>&1 ||
		die "bin/loadgen failed: $(cat "$W/lg.$tag")"
	g1=$(gw_ticks "$gw")
	q1=$(gw_ns "$gw")
	read -r n1 s1 < <(node_ticks)
	[ "$capture" = off ] || { a1=$(agent_uticks); an1=$(agent_ns); }
	extra="wall_ms=$((($(date +%s%N) - t0) / 1000000))"
	if [ "$stats" = 1 ]; then
		"$PY" "$HERE/bpf_stats.py" snap "$W/ids.$tag" >"$W/bpf1.$tag"
		sysctl -qw kernel.bpf_stats_enabled=0
		extra="$extra bpf0=$W/bpf0.$tag bpf1=$W/bpf1.$tag"
	else
		# a process that is not the proxy, in the same state
		nt=$("$BIN/bench_nodetax" tcp "$PEER_NODETAX_TCP" "$PEER_NODETAX_REPS" |
			awk '$1 == "ns_per_syscall" { print $2 }') ||
			die "bin/bench_nodetax tcp failed"
	fi
	# the access log is written as each request ends, the last ones
	# possibly after loadgen saw their responses: wait until it holds as
	# many as loadgen completed (more, when the gateway logged requests
	# loadgen counted as errors); the comparison is the report's
	wait_for 5 log_holds "$log" $((l0 + $(lg_completed "$W/lg.$tag"))) || true
	l1=$(wc -l <"$log")
	# per-route counts against the access log: every request of a slot
	# is the shop route's; the agent exports within its interval
	if [ "$capture" = auto ] || [ "$capture" = listeners ]; then
		wait_for 5 route_count_is $((l1 - l0)) || true
		extra="$extra route_count=$(route_count)"
	fi
	stop_agent
	echo "kind=rate tag=$tag gw=$gw capture=$capture load=$load rate=$rate round=$rnd stats=$stats lg=$W/lg.$tag requests=$((l1 - l0)) gw_ticks=$((g1 - g0)) gw_ns=$((q1 - q0)) node_ticks=$((n1 - n0)) steal_ticks=$((s1 - s0)) agent_uticks=$((a1 - a0)) agent_ns=$((an1 - an0)) tck=$(getconf CLK_TCK) nodetax_ns=${nt:--} $extra" >>"$W/peers"
}

# lg_completed FILE: the requests loadgen completed (its JSON line)
lg_completed() { awk 'match($0, /"completed": [0-9]+/) { n = substr($0, RSTART + 13, RLENGTH - 13) } END { print n + 0 }' "$1"; }
# log_holds FILE N: FILE has at least N lines
log_holds() { [ "$(wc -l <"$1")" -ge "$2" ]; }

# the agent's downstream requests of the shop route (/metrics)
route_count() {
	curl -sf "http://127.0.0.1:$AGENT_PORT/metrics" |
		awk '/^envoy_http_downstream_rq_total[{]/ && /k8s_httproute_name="shop"/ { s += $NF } END { printf "%.0f\n", s }'
}
route_count_is() { [ "$(route_count)" = "$1" ]; }

# sat_slot GATEWAY CAPTURE PINNED: saturation throughput (information);
# pinned: the gateway alone on the last CPU, wrk and the backend on the rest
sat_slot() {
	local gw=$1 capture=$2 pinned=$3 last=$(($(nproc) - 1)) p wrk=(wrk) out
	case $capture in
	off) ;;
	*) start_agent "S-$gw-$capture-$pinned" "$capture" "$W/m" "$(proxy_pid "$gw")" ;;
	esac
	if [ "$pinned" = 1 ]; then
		for p in $(gw_pids "$gw"); do taskset -apc "$last" "$p" >/dev/null; done
		for p in $(pgrep -P "$(cat "$W/be/nginx.pid")"); do taskset -apc "0-$((last - 1))" "$p" >/dev/null; done
		wrk=(taskset -c "0-$((last - 1))" wrk)
	fi
	out=$(run_wrk "${wrk[@]}" -t"$THREADS" -c"$CONNS" -d"${PEER_SAT_DURATION}s" -H "Host: $HOST" "$(url "$gw")" 2>&1) ||
		die "wrk failed: $out"
	if [ "$pinned" = 1 ]; then
		for p in $(gw_pids "$gw") $(pgrep -P "$(cat "$W/be/nginx.pid")"); do
			taskset -apc "0-$last" "$p" >/dev/null
		done
	fi
	stop_agent
	echo "kind=sat gw=$gw capture=$capture pinned=$pinned rps=$(echo "$out" | awk '$1 == "Requests/sec:" { print $2 }')" >>"$W/peers"
}

if phase P; then
	# loadgen against h2load at a low rate: the same server, one connection
	"$BIN/loadgen" -c 1 -r 200 -d 2 -H "Host: $HOST" -o json "$(url nginx)" >"$W/lg.check" 2>&1 ||
		die "bin/loadgen failed: $(cat "$W/lg.check")"
	h2load --h1 -c1 -t1 --rps=200 -D 2 --log-file="$W/lat.check" -H ":authority: $HOST" "$(url nginx)" >/dev/null 2>&1 ||
		log "h2load failed: no cross-check of loadgen's latency"
	echo "lg_check=$W/lg.check h2_check=$W/lat.check" >>"$W/notes"
	read -ra slots <<<"$PEER_SLOTS"
	for gw in $PEER_GATEWAYS; do
		log "phase P: $gw gateway, capacity with the agent off (wrk -c$CONNS, ${PEER_SAT_DURATION}s)"
		warm "$gw"
		for pinned in 0 1; do
			[ "$pinned" = 1 ] && [ "$(nproc)" -lt 2 ] && continue
			for c in off auto; do sat_slot "$gw" "$c" "$pinned"; done
		done
		cap=$(awk -v g="$gw" '$1 == "kind=sat" && $2 == "gw=" g && $3 == "capture=off" && $4 == "pinned=0" { sub("rps=", "", $5); print int($5) }' "$W/peers")
		[ "${cap:-0}" -gt 0 ] || die "no capacity measured for $gw (wrk output above)"
		for load in $PEER_LOADS; do
			rate=$((cap * load / 100))
			log "phase P: $gw at $load % of $cap req/s = $rate req/s, $PEER_ROUNDS rounds of: $PEER_SLOTS"
			for r in $(seq "$PEER_ROUNDS"); do
				n=${#slots[@]}
				for i in $(seq 0 $((n - 1))); do
					c=${slots[$(((i + r - 1) % n))]}
					peer_slot "P-$gw-$load-$r-$c" "$gw" "$c" "$rate" "$load" "$r" 0
				done
			done
		done
		# BPF ns per request: bpf_stats on, the empty floor included (its
		# per-run time is the stats' own cost, taken off every run)
		rate=$((cap * ${PEER_LOADS%% *} / 100))
		log "phase P: $gw, $PEER_STATS_ROUNDS bpf_stats round(s) at $rate req/s"
		read -ra sslots <<<"${PEER_SLOTS//off/}"
		for r in $(seq "$PEER_STATS_ROUNDS"); do
			n=${#sslots[@]}
			for i in $(seq 0 $((n - 1))); do
				c=${sslots[$(((i + r - 1) % n))]}
				peer_slot "PS-$gw-$r-$c" "$gw" "$c" "$rate" "${PEER_LOADS%% *}" "$r" 1
			done
		done
	done
fi

if phase A; then
	log "phase A: nginx gateway, agent off / on / on --capture sys-exit, bpf_stats off"
	warm nginx
	for r in $(seq "$ROUNDS"); do
		for c in off auto sys-exit $FLOORS; do
			NODETAX=1 round "A$r-$c" nginx "$c" 0 "$CONNS" "$DURATION" "$W/m"
		done
	done
	rate_rounds RA nginx
fi

if phase B; then
	log "phase B: haproxy gateway, agent off / on, bpf_stats off"
	warm haproxy
	for r in $(seq "$ROUNDS"); do
		for c in off auto $FLOORS; do
			round "B$r-$c" haproxy "$c" 0 "$CONNS" "$DURATION" "$W/m"
		done
	done
	rate_rounds RB haproxy
fi

# Where the BPF time goes (C): bpf_stats on. The "bytes" round's requests
# carry 16 extra 64-byte headers; nginx forwards them, so each is parsed on
# both legs: the growth of BPF ns/request over 2 x EXTRA_BYTES is the cost
# per parsed byte, the rest of a request's cost is per hook run.
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
RESP_BYTES=$(curl -s -o /dev/null -w '%{size_header}' -H "Host: $HOST" "$(url nginx)")
echo "extra_bytes=$EXTRA_BYTES head_bytes=$((2 * REQ_BYTES + 2 * RESP_BYTES))" >>"$W/notes"

if phase C; then
	log "phase C: per-program figures, bpf_stats on"
	round C-nginx nginx auto 1 "$CONNS" "$DURATION" "$W/m"
	round C-bytes nginx auto 1 "$CONNS" "$DURATION" "$W/m" "${HDRS[@]}"
	round C-haproxy haproxy auto 1 "$CONNS" "$DURATION" "$W/m"
	round C-sysexit nginx sys-exit 1 "$CONNS" "$DURATION" "$W/m"
	for f in $FLOORS; do
		[ "$f" = floor-empty ] && continue # nothing to time
		for g in nginx haproxy; do
			round "C-$f-$g" "$g" "$f" 1 "$CONNS" "$DURATION" "$W/m"
		done
	done
fi

if phase D; then
	log "phase D: scale rows, bpf_stats on"
	# The first round with thousands of connections after nginx started
	# had ~800 of 10 000 client connections reset (wrk: read errors;
	# TcpExtTCPAbortOnClose) and the same round again none, the agent on
	# both times: one unmeasured round first, so that none is the first.
	max_c=$(printf '%s\n' $SCALE_CONNS | sort -n | tail -1)
	WRK_CONNS=$max_c warm nginx
	for c in $SCALE_CONNS; do
		round "Dc$c" nginx auto 1 "$c" "$SCALE_DURATION" "$W/m"
	done
	# the connection rows with the haproxy gateway too (prefix Dh)
	if [[ " $SCALE_GATEWAYS " == *" haproxy "* ]]; then
		# within haproxy's maxconn (HA_MAXCONN: the open-file limit)
		ha_max=$((HA_MAXCONN - 100))
		WRK_CONNS=$((max_c < ha_max ? max_c : ha_max)) warm haproxy
		for c in $SCALE_CONNS; do
			[ "$c" -gt "$ha_max" ] && log "phase D: haproxy at $ha_max connections, not $c (its maxconn, the open-file limit)"
			c=$((c < ha_max ? c : ha_max))
			round "Dh$c" haproxy auto 1 "$c" "$SCALE_DURATION" "$W/m"
		done
	fi
	# the floor of the same rows: a per-socket state and nothing else
	if [[ $FLOORS == *floor-hook* ]]; then
		for c in $SCALE_CONNS; do
			round "Dc$c-floor" nginx floor-hook 1 "$c" "$SCALE_DURATION" "$W/m"
		done
	fi
	for n in $SCALE_ROUTES; do
		mkdir -p "$W/m$n"
		cp "$W"/m/*.yaml "$W/m$n/"
		# N routes in all: the bench's own two and N-2 fillers
		"$PY" "$HERE/gen_routes.py" $((n > 2 ? n - 2 : 0)) "$W/m$n/fillers.yaml"
		ROUTES=$n round "Dr$n" nginx auto 1 "$CONNS" "$SCALE_DURATION" "$W/m$n"
	done
fi

if phase T; then
	log "phase T: nginx gateway terminating TLS, agent off / on (TLSCapture off) / on (TLSCapture on)"
	warm nginx-tls
	for r in $(seq "$ROUNDS"); do
		for c in off auto tls; do
			round "T$r-$c" nginx-tls "$c" 0 "$CONNS" "$DURATION" "$W/m"
		done
	done
	round T-stats nginx-tls tls 1 "$CONNS" "$DURATION" "$W/m"
fi
if phase T; then
	log "phase T: the same with HTTP/2 (h2load), agent off / on (gates off) / on (TLSCapture, HTTP2)"
	for r in $(seq "$ROUNDS"); do
		for c in off auto h2; do
			round "H$r-$c" nginx-h2 "$c" 0 "$CONNS" "$DURATION" "$W/m"
		done
	done
	round H-stats nginx-h2 h2 1 "$CONNS" "$DURATION" "$W/m"
fi
: >"$W/uprobe"
if phase T; then
	log "one uprobe hit, single-stepped and emulated (bin/bench_uprobe)"
	"$BIN/bench_uprobe" >"$W/uprobe" 2>&1 || FAILED_T=" bench_uprobe"
fi

slab_kb() { awk '$1 == "Slab:" { print $2 }' /proc/meminfo; }
few_estab() { [ "$(estab "$GW_PORT")" -lt 50 ]; }
idle_ready() { ready_line "$W/idle.out" "$IDLE_PID"; }

# A memory cgroup of its own for the agent of phase E (v1 with kernel memory
# accounting, or v2 with the memory controller): what the kernel charges
# it is the agent's kernel memory, exactly; Slab moves with every socket
# buffer on the machine (a Slab delta of 696 B per connection came out of
# a run where each tracked socket held a 2 KiB storage object).
mem_cg_make() {
	local d
	for d in /sys/fs/cgroup/memory /sys/fs/cgroup; do
		if [ -e "$d/memory.kmem.usage_in_bytes" ] ||
			grep -qw memory "$d/cgroup.subtree_control" 2>/dev/null; then
			mkdir -p "$d/mm-bench-$$" 2>/dev/null && echo "$d/mm-bench-$$" && return 0
		fi
	done
	return 1
}

kmem_bytes() { # CGROUP: kernel memory charged to it (v1 kmem usage, v2 memory.stat kernel)
	if [ -r "$1/memory.kmem.usage_in_bytes" ]; then
		cat "$1/memory.kmem.usage_in_bytes"
	else
		awk '$1 == "kernel" { print $2 }' "$1/memory.stat"
	fi
}

tracked_conns() { # sockets with state now: connections opened - closed (BPF counters)
	"$BIN/milometer" ctl --socket "$W/mm.sock" --json stats |
		"$PY" -c 'import json, sys; b = json.load(sys.stdin)["bpf"]; print(b["connections_opened"] - b["connections_closed"])'
}

# Kernel memory (E): Slab growth while MEM_CONNS idle keep-alive connections
# (one request each, so the agent tracks them) are open, agent off vs on;
# with the agent on, also its memory cgroup's kernel memory over the
# connections it tracks.
mem_round() { # CAPTURE
	local c=$1 s0 s1 k0= k1= tracked=
	[ "$c" = off ] || start_agent "E-$c" "$c" "$W/m" "$GW_PID"
	wait_for 30 few_estab || log "connections of the last round are still open"
	sync
	[ "$c" = off ] || [ -z "${AGENT_CG:-}" ] || k0=$(kmem_bytes "$AGENT_CG")
	s0=$(slab_kb)
	rm -f "$W/idle.in"
	mkfifo "$W/idle.in"
	"$PY" "$HERE/idle_conns.py" "127.0.0.1:$GW_PORT" "$HOST" "$URL_PATH" \
		"$MEM_CONNS" <"$W/idle.in" >"$W/idle.out" 2>"$W/idle.err" &
	IDLE_PID=$!
	exec 7>"$W/idle.in"
	wait_for 120 idle_ready ||
		die "idle_conns.py did not open $MEM_CONNS connections: $(cat "$W/idle.err")"
	s1=$(slab_kb)
	if [ -n "$k0" ]; then
		k1=$(kmem_bytes "$AGENT_CG")
		tracked=$(tracked_conns) || log "milometer ctl stats failed: no tracked-connection count"
	fi
	echo "capture=$c slab0_kb=$s0 slab1_kb=$s1 kmem0=${k0:--} kmem1=${k1:--} tracked=${tracked:--} $(sed 's/ready \([0-9]*\) \([0-9]*\)/open=\1 failed=\2/' "$W/idle.out") estab=$(estab "$GW_PORT")" >>"$W/memory_k"
	if [ "$c" != off ]; then
		"$PY" "$HERE/bpf_stats.py" conn mm_sk_conns >"$W/conn_size" || true
		"$PY" "$HERE/bpf_stats.py" conn mm_conns >"$W/conn_size_hash" || true
	fi
	stop_idle
	stop_agent
}

if phase E; then
	log "phase E: kernel memory, $MEM_CONNS idle keep-alive connections, agent off / on"
	mem_round off
	AGENT_CG=$(mem_cg_make) ||
		log "no memory cgroup with kernel memory accounting: the Slab delta only"
	mem_round auto
	[ -z "$AGENT_CG" ] || rmdir "$AGENT_CG" 2>/dev/null || true
	AGENT_CG=
fi

# A failing tool is reported after the figures that did come out.
FAILED=${FAILED_T:-}
: >"$W/aggregate"
: >"$W/export"
: >"$W/memory"
: >"$W/cel"
if phase F; then
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
	log "CEL transforms, ns per evaluation (bin/bench_cel)"
	if ! "$BIN/bench_cel" >"$W/cel" 2>&1; then
		FAILED="$FAILED bench_cel"
		sed 's/^/  /' "$W/cel" >&2
	fi
fi

: >"$W/bpf_cost"
if phase G; then
	log "BPF cost per exchange leg, warm, code-cold and cold caches (bin/bench_bpf_exchange)"
	if ! "$BIN/bench_bpf_exchange" >"$W/bpf_cost" 2>&1; then
		FAILED="$FAILED bench_bpf_exchange"
		sed 's/^/  /' "$W/bpf_cost" >&2
	fi
fi

"$PY" "$HERE/report.py" --rounds "$W/rounds" --nodetax "$W/nodetax" \
	--kmem "$W/memory_k" --conn-size "$W/conn_size" --notes "$W/notes" \
	--aggregate "$W/aggregate" --export "$W/export" --memory "$W/memory" \
	--bpf-cost "$W/bpf_cost" --uprobe "$W/uprobe" --cel "$W/cel" \
	--fingerprint "$W/fingerprint.json" --results-out "$RESULTS" \
	--peers "$W/peers" "${COMPARE[@]}" ||
	die "report.py failed on the collected figures (BENCH_KEEP=1 keeps $W)"
[ -z "$FAILED" ] || die "failed:$FAILED (output above)"
