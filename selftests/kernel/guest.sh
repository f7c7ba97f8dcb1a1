#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The kernel-matrix test itself, run unchanged inside the qemu guest (as
# /t/guest.sh, started by init.sh) and on the host kernel (run.sh, in a
# private network and mount namespace). busybox sh and busybox tools in both
# places; nginx, curl, wrk and the agent are this machine's binaries.
#
# A backend nginx (as mm-km-static) and the gateway nginx under test (as
# mm-km-nginx: --proxy-exe matches that name only), config generated from
# selftests/integration/manifests/base by gen_nginx at staging time; the real
# agent; curl over keep-alive and busybox wget with a connection per request
# over every route, rule and status class (plus wrk in the full run). The
# agent's per-route counts must equal nginx's access log exactly.
#
# Environment (set by $MM_T/env.sh, written by stage.sh):
#   MM_T            directory holding the binaries, configs and this script
#   MM_W            scratch directory (created)
#   MM_N            requests per case per client (default 10)
#   MM_WRK_SECONDS  wrk duration; 0 skips wrk (default 0)
#   MM_AGENT_ARGS   extra arguments for `milometer run`
#   MM_READY_SECONDS  how long the agent may take to be ready (default 180)
#   MM_CAPTURE      the capture mode asked for (--capture): auto (default),
#                   sock or sys-exit; the mode the agent attached with is
#                   printed as "capture mode: MODE" (run.sh records it) and,
#                   when one was asked for, checked
#   MM_AGENT_CMD    replaces the agent command line entirely (the lead's
#                   override; it must serve /metrics and /readyz on
#                   127.0.0.1:$AGENT_PORT like `milometer run` does)
#   $MM_T/extra.sh  extra steps, one shell command per line, each its own test
#                   (run with cwd $MM_T after the counts are checked)
# Prints "ok   NAME" / "FAIL NAME" per step and a closing "N passed, N failed".
T=${MM_T:-/t}
# shellcheck source=/dev/null # written by stage.sh
[ -f "$T/env.sh" ] && . "$T/env.sh"
W=${MM_W:-/tmp/km}
N=${MM_N:-10}
PROXY_PORT=28080
BACKEND_PORT=28182
AGENT_PORT=29464
URL=http://127.0.0.1:$PROXY_PORT
pass=0
failed=0
PIDS=

mkdir -p "$W" || exit 1
# for MM_AGENT_CMD and the extra steps
export MM_T="$T" MM_W="$W"

uptime_s() { cut -d' ' -f1 /proc/uptime; }
log() { echo "[$(uptime_s)] $*"; }
ok() {
	echo "ok   $1"
	pass=$((pass + 1))
}
bad() {
	echo "FAIL $1${2:+: $2}"
	failed=$((failed + 1))
}
alive() { kill -0 "$1" 2>/dev/null; }

# wait_for SECONDS CMD...: poll CMD every 0.1 s
wait_for() {
	_end=$(($(date +%s) + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -le "$_end" ] || return 1
		sleep 0.1
	done
}
# listening PORT: something listens on 127.0.0.1:PORT (/proc, no ss needed)
listening() {
	_hex=$(printf ':%04X' "$1")
	awk -v p="$_hex" '$2 ~ p"$" && $4 == "0A" { f = 1 } END { exit !f }' \
		/proc/net/tcp
}
http_ok() { curl -fs -o /dev/null --max-time 2 "$1"; }

# stop PID: SIGTERM, up to 10 s, then SIGKILL; returns the exit status
stop() {
	alive "$1" || { wait "$1" 2>/dev/null; return $?; }
	kill -TERM "$1" 2>/dev/null
	_i=0
	while alive "$1" && [ $_i -lt 100 ]; do
		sleep 0.1
		_i=$((_i + 1))
	done
	alive "$1" && { kill -KILL "$1"; log "pid $1 ignored SIGTERM for 10 s"; }
	wait "$1"
}

# --- the environment --------------------------------------------------------
echo "kernel $(uname -r), $(uname -m), $(nproc) CPUs"
if [ -r /sys/kernel/btf/vmlinux ]; then
	ok "kernel_btf"
else
	bad "kernel_btf" "/sys/kernel/btf/vmlinux missing (CONFIG_DEBUG_INFO_BTF)"
fi
for tp in sock/sock_recv_length syscalls/sys_enter_recvfrom raw_syscalls/sys_exit; do
	if [ -d /sys/kernel/tracing/events/$tp ]; then h=yes; else h=no; fi
	echo "  tracepoint $tp: $h"
done
[ -e /sys/bus/event_source/devices/kprobe ] && h=yes || h=no
echo "  kprobe PMU: $h"

# --- backend and gateway nginx ----------------------------------------------
mkdir -p "$W/static/logs" "$W/gw/tmp"
sed "s|@W@|$W|g" "$T/static.conf.in" >"$W/static/nginx.conf"
sed "s|@W@|$W|g" "$T/gw.conf.in" >"$W/gw/nginx.conf"
LOG=$W/gw/access.log
"$T/mm-km-static" -p "$W/static/" -e "$W/static/error.log" \
	-c "$W/static/nginx.conf" -g 'daemon off;' >"$W/static.out" 2>&1 &
PIDS="$PIDS $!"
"$T/mm-km-nginx" -p "$W/gw/" -e "$W/gw/error.log" -c "$W/gw/nginx.conf" \
	-g 'daemon off;' >"$W/gw.out" 2>&1 &
NGINX_PID=$!
PIDS="$PIDS $NGINX_PID"
if wait_for 20 listening $BACKEND_PORT && wait_for 20 listening $PROXY_PORT &&
	[ "$(curl -s -o /dev/null -w '%{http_code}' \
		http://127.0.0.1:$BACKEND_PORT/)" = 200 ] &&
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: nohost.test' \
		$URL/)" = 404 ]; then
	ok "nginx_up"
else
	bad "nginx_up" "gateway or backend nginx not serving"
	tail -5 "$W"/static.out "$W"/gw.out "$W"/*/error.log 2>/dev/null
fi
# the probe request above (unmatched: no upstream connection to keep
# open from before the agent) is not part of the comparison; nginx logs
# it after its response went out, so curl may be back before the line is
# written (truncated first, the line then lands in the compared log)
wait_for 5 grep -q nohost.test "$LOG" || bad "nginx_up" "the probe request was not logged"
: >"$LOG"

# --- the agent --------------------------------------------------------------
AGENT_OUT=$W/agent.out
if [ -n "${MM_AGENT_CMD:-}" ]; then
	AGENT="$MM_AGENT_CMD"
else
	# TLS capture on: its object (uprobes on the gateway's libssl) must
	# load and attach on every kernel too, beside the plaintext data path
	AGENT="$T/milometer run --manifests $T/manifests --proxy-exe mm-km-nginx"
	AGENT="$AGENT --feature-gates=TLSCapture=true"
	AGENT="$AGENT --prometheus-listen 127.0.0.1:$AGENT_PORT"
	AGENT="$AGENT --socket $W/agent.sock ${MM_AGENT_ARGS:-}"
	AGENT="$AGENT${MM_CAPTURE:+ --capture $MM_CAPTURE}"
fi
log "agent: $AGENT"
t0=$(uptime_s)
sh -c "exec $AGENT" >"$AGENT_OUT" 2>&1 &
AGENT_PID=$!
agent_ready=
while :; do
	if http_ok "http://127.0.0.1:$AGENT_PORT/readyz"; then
		agent_ready=1
		break
	fi
	alive $AGENT_PID || break
	# verifying the object under TCG takes ~20 s on x86-64, ~95 s on
	# arm64 (MM_READY_SECONDS); a stuck agent fails here
	[ "$(awk -v a="$(uptime_s)" -v b="$t0" -v m="${MM_READY_SECONDS:-180}" 'BEGIN { print (a - b > m) }')" = 0 ] ||
		break
	sleep 0.2
done
if [ -n "$agent_ready" ]; then
	ok "agent_start"
	log "agent ready after $(awk -v a="$(uptime_s)" -v b="$t0" 'BEGIN { print a - b }') s"
	mode=$(sed -n 's/.*attached (capture mode \([^,)]*\).*/\1/p' "$AGENT_OUT" | head -1)
	echo "capture mode: ${mode:-unknown}"
	# the data path build: bpf_loop (5.17+) or bounded (docs/kernel-support.md)
	loops=$(sed -n 's/.*attached (capture mode [^,)]*, loops \([^)]*\)).*/\1/p' "$AGENT_OUT" | head -1)
	echo "loops: ${loops:-unknown}"
	case ${MM_CAPTURE:-auto} in
	auto) ;;
	"$mode") ok "capture_mode_$mode" ;;
	*) bad "capture_mode_$MM_CAPTURE" "the agent attached with capture mode '${mode:-unknown}'" ;;
	esac
	if [ -z "${MM_AGENT_CMD:-}" ]; then
		if grep -q 'TLS capture: uprobes on .*libssl' "$AGENT_OUT"; then
			ok "tls_capture_attached ($(grep -o 'uprobes on [^ ]*' "$AGENT_OUT" | head -1))"
		else
			bad "tls_capture_attached" "no uprobes on the gateway's libssl: $(grep -i tls "$AGENT_OUT")"
		fi
	fi
	"$T/milometer" ctl --socket "$W/agent.sock" status 2>/dev/null | head -12
else
	if alive $AGENT_PID; then
		why="not ready within ${MM_READY_SECONDS:-180} s"
		stop $AGENT_PID
	else
		wait $AGENT_PID
		why="exited with status $? before it was ready"
	fi
	AGENT_PID=
	bad "agent_start" "$why; its output:"
	# with -v the verifier log is long: its verdict lines first
	if [ "$(wc -l <"$AGENT_OUT")" -gt 25 ]; then
		grep -E 'combined stack|too large|Too large|invalid|unreachable|-- END PROG LOAD LOG|failed|error' \
			"$AGENT_OUT" | grep -v '^[0-9]*: (' | tail -15 | sed 's/^/    | /'
		echo "    --- last 25 lines"
	fi
	tail -25 "$AGENT_OUT" | sed 's/^/    | /'
fi

# --- traffic ----------------------------------------------------------------
# cases: METHOD HOST PATH STATUS [HEADER]; every route, rule and class of
# manifests/base, a header match (decided in user space) and unmatched
CASES="GET api.example.com /v1/status 200
POST api.example.com /v1/orders 200
GET api.example.com /v1/users/s404 404
GET api.example.com /v1/items/s503 503
GET foo.example.com /anything 200
GET bar.baz.example.com /x/s500 500
GET canary.example.com /feature 200 X-Canary:1
GET www.shop.test / 200
GET www.shop.test /cart/1 200
GET www.shop.test /static/x/s404 404
GET nohost.test / 404
GET www.shop.test /nope 404"
sent=0
client_bad=
# curl: N requests per case on one keep-alive connection (one -o per URL)
echo "$CASES" >"$W/cases"
while read -r m h p want hdr; do
	set -- -H "Host: $h"
	[ -z "$hdr" ] || set -- "$@" -H "${hdr%%:*}: ${hdr#*:}"
	[ "$m" != POST ] || set -- "$@" --data '{"n":1}'
	i=0
	urls=
	while [ $i -lt "$N" ]; do
		urls="$urls -o /dev/null $URL$p"
		i=$((i + 1))
	done
	# shellcheck disable=SC2086
	got=$(curl -s -w '%{http_code}\n' -X "$m" "$@" $urls |
		sort | uniq -c | awk '{ printf "%s%sx%s", s, $1, $2; s = "," }')
	[ "$got" = "${N}x$want" ] || client_bad="$client_bad curl $m $h$p: $got (want ${N}x$want);"
	sent=$((sent + N))
done <"$W/cases"
# busybox wget: a new connection per request (GET and POST only)
while read -r m h p want hdr; do
	set -- --header "Host: $h"
	[ -z "$hdr" ] || set -- "$@" --header "${hdr%%:*}: ${hdr#*:}"
	[ "$m" != POST ] || set -- "$@" --post-data '{"n":1}'
	i=0
	while [ $i -lt "$N" ]; do
		# non-2xx makes wget exit 1: the log has the status
		wget -q -O /dev/null "$@" "$URL$p" 2>/dev/null
		i=$((i + 1))
	done
	sent=$((sent + N))
done <"$W/cases"
# wrk counts the responses it read: up to one request per connection may
# be logged but cut off when its time is up
slack=0
if [ "${MM_WRK_SECONDS:-0}" -gt 0 ]; then
	log "wrk: ${MM_WRK_SECONDS} s, 2 threads, 4 connections, wrk_mix.lua"
	"$T/wrk" -t2 -c4 -d"${MM_WRK_SECONDS}s" -s "$T/wrk_mix.lua" "$URL/" >"$W/wrk.out" 2>&1 ||
		client_bad="$client_bad wrk failed: $(tail -3 "$W/wrk.out");"
	wrk_n=$(awk '/requests in/ { print $1 }' "$W/wrk.out")
	log "wrk: ${wrk_n:-?} responses"
	sent=$((sent + ${wrk_n:-0}))
	slack=4
fi
log_lines() { wc -l <"$LOG"; }
log_has() { [ "$(log_lines)" -ge "$1" ]; }
wait_for 20 log_has $sent
logged=$(log_lines)
if [ -z "$client_bad" ] && [ "$logged" -ge $sent ] && [ "$logged" -le $((sent + slack)) ]; then
	ok "traffic ($logged requests in the access log, the clients counted $sent)"
else
	bad "traffic" "the clients counted $sent, the access log has $logged;$client_bad"
fi
echo "  access log by route and status:"
cut -f1,2 "$LOG" | sort | uniq -c | sed 's/^/   /'

# --- the comparison ---------------------------------------------------------
if [ -n "$AGENT_PID" ]; then
	# poll until equal; stop early when the agent stopped changing for 5 s
	end=$(($(date +%s) + 60))
	last=
	same_since=$(date +%s)
	while :; do
		curl -fsS -o "$W/metrics" "http://127.0.0.1:$AGENT_PORT/metrics" || : >"$W/metrics"
		awk -f "$T/compare.awk" "$LOG" "$W/metrics" >"$W/compare.out" && break
		cur=$(cksum <"$W/compare.out")
		now=$(date +%s)
		[ "$cur" = "$last" ] || { last=$cur; same_since=$now; }
		if [ "$now" -ge $end ] || [ $((now - same_since)) -ge 5 ]; then break; fi
		sleep 0.3
	done
	if awk -f "$T/compare.awk" "$LOG" "$W/metrics" >"$W/compare.out"; then
		ok "counts_match_access_log"
		cat "$W/compare.out"
	else
		bad "counts_match_access_log" "the agent's counts differ from the access log:"
		cat "$W/compare.out"
	fi
	if "$T/milometer" ctl --socket "$W/agent.sock" stats >"$W/stats" 2>&1; then
		echo "  agent stats (non-zero):"
		grep -v ' 0$' "$W/stats" | head -30 | sed 's/^/   /'
	fi
	stop $AGENT_PID
	rc=$?
	AGENT_PID=
	if [ $rc -eq 0 ]; then
		ok "agent_detach"
	else
		bad "agent_detach" "exit status $rc on SIGTERM"
		tail -10 "$AGENT_OUT" | sed 's/^/    | /'
	fi
else
	bad "counts_match_access_log" "no agent running (see agent_start)"
fi

# --- extra steps --------------------------------------------------------------
if [ -s "$T/extra.sh" ]; then
	n=0
	while IFS= read -r cmd; do
		[ -n "$cmd" ] || continue
		n=$((n + 1))
		echo "--- extra $n: $cmd"
		(cd "$T" && sh -c "$cmd") </dev/null >"$W/extra$n.out" 2>&1
		rc=$?
		tail -40 "$W/extra$n.out" | sed 's/^/    | /'
		if [ $rc -eq 0 ]; then ok "extra_$n"; else bad "extra_$n" "exit status $rc: $cmd"; fi
	done <"$T/extra.sh"
fi

for p in $PIDS; do stop "$p"; done
echo "$pass passed, $failed failed"
[ $failed -eq 0 ]
