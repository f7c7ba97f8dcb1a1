# SPDX-License-Identifier: Apache-2.0
# Shared helpers of the integration tests; sourced by every test_*.sh.
#
# Each test gets its own temp dir $T, starts everything it needs (proxies,
# backends, the agent, prometheus, sinks) through start_bg, and the EXIT
# trap stops all of it, even when the test fails. Nothing waits with a
# fixed sleep where a condition can be polled: wait_for TIMEOUT CMD...
#
# Ground truth always comes from outside the agent: the proxy's own access
# log and the client's own counts (mmcheck.py compares).

set -euo pipefail

IT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$IT_DIR/../.." && pwd)
BIN=$ROOT/bin
PY=/usr/bin/python3
MANIFESTS_SRC=$IT_DIR/manifests

# Fixed loopback ports: tests run one at a time; port_free fails clearly
# when something else holds one.
PROXY_PORT=${MM_IT_PROXY_PORT:-28080}
PY_PORT=28181     # python backend (backendRef "py")
STATIC_PORT=28182 # nginx fixed-response backend (backendRef "static")
AGENT_PORT=${MM_IT_AGENT_PORT:-29464}
PROM_PORT=${MM_IT_PROM_PORT:-29090}
SINK_PORT=${MM_IT_SINK_PORT:-24318}
AGENT_URL=http://127.0.0.1:$AGENT_PORT
METRICS_URL=$AGENT_URL/metrics
PIN_DIR=/sys/fs/bpf/milometer
# How long an agent may take to be ready: loading its BPF programs is the
# verifier's CPU time, a few seconds on an idle machine and several times
# that on a busy one. Only a bound: readiness is polled.
AGENT_READY_S=${MM_IT_AGENT_READY_S:-120}

T=$(mktemp -d /tmp/mm-it.XXXXXX)
chmod 755 "$T"
BG_PIDS=()
BG_NAMES=()
AGENT_PID=
AGENT_STARTED=
AGENT_TARGET=()
AGENT_SOURCE=()

log() { printf '[%s] %s\n' "$(date +%T.%3N)" "$*" >&2; }

fail() {
	printf 'FAIL: %s\n' "$*" >&2
	exit 1
}

# wait_for TIMEOUT_SECONDS CMD [ARGS]...: poll CMD every 0.1 s until it
# succeeds; returns 1 (and says what) when the time runs out.
wait_for() {
	local timeout=$1
	shift
	local end=$(($(date +%s%N) + timeout * 1000000000))
	while ! "$@" >/dev/null 2>&1; do
		if [ "$(date +%s%N)" -gt "$end" ]; then
			log "timed out after ${timeout}s waiting for: $*"
			return 1
		fi
		sleep 0.1
	done
}

port_free() {
	local p
	for p in "$@"; do
		if [ -n "$(ss -Hltn "sport = :$p" 2>/dev/null)" ]; then
			ss -ltnp "sport = :$p" >&2 || true
			fail "TCP port $p is in use; stop what holds it or set MM_IT_*_PORT"
		fi
	done
}

listening() { [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]; }
# no client connection to server port $1 is open: a server logs each
# request before it closes the connection it came on (499s included)
conns_gone() {
	[ -z "$(ss -Htn state established state close-wait state syn-recv "sport = :$1" 2>/dev/null)" ]
}

# start_bg NAME CMD [ARGS]...: run in the background, output in $T/NAME.out.
start_bg() {
	local name=$1
	shift
	"$@" >"$T/$name.out" 2>&1 &
	BG_PIDS+=($!)
	BG_NAMES+=("$name")
	LAST_PID=$!
}

alive() { kill -0 "$1" 2>/dev/null; }

# stop_pid PID: SIGTERM, wait up to 10 s, then SIGKILL.
stop_pid() {
	local pid=$1 i
	alive "$pid" || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 100); do
		alive "$pid" || break
		sleep 0.1
	done
	if alive "$pid"; then
		log "pid $pid ignored SIGTERM for 10 s, killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	local rc=$? i
	set +e
	if [ $rc -ne 0 ] && [ -n "$AGENT_PID" ] && alive "$AGENT_PID"; then
		# what the agent itself says, for the failure report
		curl -fsS "$METRICS_URL" >"$T/metrics.at-failure.txt" 2>/dev/null
		echo "--- milometer ctl stats" >&2
		ctl stats 2>&1 | grep -v ' 0$' | head -40 >&2
	fi
	# the agent first: it must detach cleanly (exit 0, no pins) while the
	# proxies still run
	agent_detach || rc=1
	for ((i = ${#BG_PIDS[@]} - 1; i >= 0; i--)); do
		stop_pid "${BG_PIDS[i]}"
	done
	# nginx workers of a master that died uncleanly
	local pf
	for pf in "$T"/*/nginx.pid; do
		[ -f "$pf" ] && stop_pid "$(cat "$pf")"
	done
	if [ -n "$AGENT_STARTED" ] && [ -n "${MM_IT_SHARED_BPFFS:-}" ] &&
		[ -e "$PIN_DIR" ]; then
		log "BPF pins left in $PIN_DIR after the agent exited:"
		ls -la "$PIN_DIR" >&2
		rc=1
	fi
	if [ $rc -ne 0 ]; then
		log "test failed; files kept in $T"
		for f in "$T"/agent.out; do
			[ -f "$f" ] && { echo "--- tail $f" >&2; tail -30 "$f" >&2; }
		done
	elif [ -z "${MM_IT_KEEP:-}" ]; then
		rm -rf "$T"
	else
		log "files kept in $T"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

need_root() {
	[ "$(id -u)" = 0 ] || fail "integration tests load BPF and must run as root"
}

need_bin() {
	local b
	for b in "$@"; do
		[ -x "$BIN/$b" ] || fail "$BIN/$b is missing: run make first"
	done
}

# --- manifests -------------------------------------------------------------

# use_manifests SET...: copy manifests/SET/*.yaml into $T/manifests.
use_manifests() {
	mkdir -p "$T/manifests"
	local s
	for s in "$@"; do
		cp "$MANIFESTS_SRC/$s"/*.yaml "$T/manifests/"
	done
}

# explain URL [ARGS]: the route the agent's compiler picks, first line.
explain() {
	local url=$1
	shift
	"$BIN/milometer" explain --manifests "$T/manifests" "$@" "$url" | head -1
}

# --- backends --------------------------------------------------------------

start_py_backend() {
	port_free $PY_PORT
	start_bg py-backend $PY "$IT_DIR/backend.py" $PY_PORT --name py
	wait_for 10 listening $PY_PORT || fail "python backend did not start"
}

# The fixed-response backend is nginx under another executable name, so
# an agent told --proxy-exe nginx does not count it as the proxy.
start_static_backend() {
	port_free $STATIC_PORT
	local d=$T/static
	mkdir -p "$d/logs"
	cp /usr/sbin/nginx "$T/mm-static"
	cat >"$d/nginx.conf" <<-EOF
		user root;
		worker_processes 1;
		pid $d/nginx.pid;
		error_log $d/error.log warn;
		events { worker_connections 4096; }
		http {
		    access_log off;
		    keepalive_requests 1000000;
		    server {
		        listen 127.0.0.1:$STATIC_PORT backlog=4096;
		        location ~ /s404 { return 404 "not found\n"; }
		        location ~ /s500 { return 500 "boom\n"; }
		        location ~ /s503 { return 503 "unavailable\n"; }
		        location / { return 200 "static ok\n"; }
		    }
		}
	EOF
	start_bg static-backend "$T/mm-static" -p "$d/" -c "$d/nginx.conf" \
		-g 'daemon off;'
	wait_for 10 listening $STATIC_PORT || fail "static nginx backend did not start"
}

start_backends() {
	start_py_backend
	start_static_backend
}

# --- nginx, the proxy under test ------------------------------------------

NGINX_DIR=$T/nginx
NGINX_LOG=$NGINX_DIR/access.log

# nginx_config: (re)generate $NGINX_DIR/nginx.conf from $T/manifests with
# bin/gen_nginx, then tune what the tests need and the generator leaves at
# nginx's defaults: two workers (the agent must follow every worker),
# workers as root (temp dirs live in $T), upstream keep-alive (exercises
# the upstream leg with many requests per connection), no keepalive_requests
# cap, $connection/$connection_requests/$upstream_connect_time appended
# to the log line, and with NGINX_WORKER_CONNECTIONS set, that many
# connections per worker.
nginx_config() {
	mkdir -p "$NGINX_DIR/tmp"
	"$BIN/gen_nginx" --manifests "$T/manifests" \
		--listen "127.0.0.1:$PROXY_PORT" --log "$NGINX_LOG" \
		--upstream py=127.0.0.1:$PY_PORT \
		--upstream static=127.0.0.1:$STATIC_PORT \
		-o "$NGINX_DIR/nginx.conf.gen" ||
		fail "gen_nginx failed on $T/manifests"
	local ka="s/^\\(    upstream mm_.* {\\)\$/\\1\\n\\tkeepalive 16;/"
	[ "${NGINX_UP_KEEPALIVE:-on}" = on ] || ka=
	# NGINX_TLS_PORT: every server also listens there with TLS (the
	# certificate and key in $T/tls.crt, $T/tls.key), with HTTP/2 by ALPN
	# when NGINX_TLS_H2=1; NGINX_H2C_PORT: and there with prior-knowledge h2c
	local tls= h2= h2c=
	[ "${NGINX_TLS_H2:-}" != 1 ] || h2=" http2"
	[ -z "${NGINX_H2C_PORT:-}" ] || h2c="\n\tlisten 127.0.0.1:$NGINX_H2C_PORT http2;"
	[ -z "${NGINX_TLS_PORT:-}" ] ||
		tls="s|^\(\tlisten 127.0.0.1:$PROXY_PORT;\)\$|\1\n\tlisten 127.0.0.1:$NGINX_TLS_PORT ssl$h2;$h2c|"
	[ -n "${NGINX_TLS_PORT:-}" ] || [ -z "$h2c" ] ||
		tls="s|^\(\tlisten 127.0.0.1:$PROXY_PORT;\)\$|\1$h2c|"
	# NGINX_WORKER_CONNECTIONS: more than nginx's default 1024 per worker
	local wc=
	[ -z "${NGINX_WORKER_CONNECTIONS:-}" ] ||
		wc="s/^events { worker_connections [0-9]*; }/worker_rlimit_nofile $((NGINX_WORKER_CONNECTIONS + 64));\nevents { worker_connections $NGINX_WORKER_CONNECTIONS; }/"
	sed -e 's/^worker_processes 1;/user root;\nworker_processes 2;/' \
	    -e 's/^http {/http {\n    keepalive_requests 1000000;/' \
	    -e "$ka" -e "$tls" -e "$wc" \
	    -e 's/\$request_uri";/$request_uri\\t$connection\\t$connection_requests\\t$upstream_connect_time";/' \
	    "$NGINX_DIR/nginx.conf.gen" >"$NGINX_DIR/nginx.conf"
	[ -z "$wc" ] ||
		grep -q "^events { worker_connections $NGINX_WORKER_CONNECTIONS; }" "$NGINX_DIR/nginx.conf" ||
		fail "nginx_config: gen_nginx's worker_connections line changed; NGINX_WORKER_CONNECTIONS not applied"
	[ -z "${NGINX_TLS_PORT:-}" ] ||
		sed -i "s|^http {|http {\n    ssl_certificate $T/tls.crt;\n    ssl_certificate_key $T/tls.key;|" \
			"$NGINX_DIR/nginx.conf"
	# $T/nginx-extra.conf: server blocks of a test's own, inside http {}
	if [ -f "$T/nginx-extra.conf" ]; then
		sed -i '$d' "$NGINX_DIR/nginx.conf"
		cat "$T/nginx-extra.conf" >>"$NGINX_DIR/nginx.conf"
		echo '}' >>"$NGINX_DIR/nginx.conf"
	fi
	grep -q 'connection_requests' "$NGINX_DIR/nginx.conf" ||
		fail "gen_nginx's log_format changed: update nginx_config in lib.sh"
	/usr/sbin/nginx -t -q -p "$NGINX_DIR/" -e "$NGINX_DIR/error.log" \
		-c "$NGINX_DIR/nginx.conf" ||
		fail "generated nginx config does not load: $NGINX_DIR/nginx.conf"
}

# The proxy under test runs as a copy of nginx named mm-it-nginx: other
# nginx instances on the machine (a demo, a colleague's smoke test) must not
# add to the agent's counts, and --proxy-exe matches executable names.
NGINX=$T/mm-it-nginx
start_nginx() {
	port_free $PROXY_PORT
	[ -x "$NGINX" ] || cp /usr/sbin/nginx "$NGINX"
	nginx_config
	start_bg nginx "$NGINX" -p "$NGINX_DIR/" -e "$NGINX_DIR/error.log" \
		-c "$NGINX_DIR/nginx.conf" -g 'daemon off;'
	NGINX_PID=$LAST_PID
	wait_for 10 listening $PROXY_PORT || fail "nginx did not start: $(tail -5 "$T/nginx.out")"
}

nginx_workers() { pgrep -P "$NGINX_PID" | sort | tr '\n' ' '; }

# nginx_reload: new config, new workers; waits until the old ones are gone.
nginx_reload() {
	local old
	old=$(nginx_workers)
	nginx_config
	kill -HUP "$NGINX_PID"
	wait_for 20 nginx_workers_replaced "$old" ||
		fail "nginx workers not replaced after reload (still $(nginx_workers))"
}

nginx_workers_replaced() {
	local w
	for w in $1; do
		alive "$w" && return 1
	done
	[ -n "$(nginx_workers)" ]
}

# log_lines FILE: requests logged so far.
log_lines() { [ -f "$1" ] && wc -l <"$1" || echo 0; }

# wait_log_lines FILE N: the proxy logged at least N requests.
wait_log_lines() { wait_for 20 log_at_least "$1" "$2"; }
log_at_least() { [ "$(log_lines "$1")" -ge "$2" ]; }

# --- haproxy, the other proxy ---------------------------------------------

HA_LOG=$T/haproxy/access.log

# start_haproxy NBTHREAD: haproxy routing like manifests/base (haproxy.cfg.in),
# one log line per request on stdout into $HA_LOG, as mm-it-haproxy.
start_haproxy() {
	port_free $PROXY_PORT
	mkdir -p "$T/haproxy"
	sed -e "s/@PROXY_PORT@/$PROXY_PORT/g" -e "s/@PY_PORT@/$PY_PORT/g" \
	    -e "s/@STATIC_PORT@/$STATIC_PORT/g" -e "s/@NBTHREAD@/$1/g" \
	    "$IT_DIR/haproxy.cfg.in" >"$T/haproxy/haproxy.cfg"
	# HAPROXY_TLS_PORT: the frontend also binds there with TLS ($T/tls.pem:
	# certificate and key), ALPN $HAPROXY_ALPN (default http/1.1)
	[ -z "${HAPROXY_TLS_PORT:-}" ] ||
		sed -i "s|^\(    bind 127.0.0.1:$PROXY_PORT\)\$|\1\n    bind 127.0.0.1:$HAPROXY_TLS_PORT ssl crt $T/tls.pem alpn ${HAPROXY_ALPN:-http/1.1}|" \
			"$T/haproxy/haproxy.cfg"
	haproxy -c -q -f "$T/haproxy/haproxy.cfg" || fail "haproxy.cfg does not load"
	cp /usr/sbin/haproxy "$T/mm-it-haproxy"
	start_bg haproxy sh -c "exec '$T/mm-it-haproxy' -db -f '$T/haproxy/haproxy.cfg' >'$HA_LOG'"
	wait_for 10 listening $PROXY_PORT ||
		fail "haproxy did not start: $(cat "$T/haproxy.out")"
}

# make_cert: a self-signed certificate and key for TLS listeners, in
# $T/tls.crt and $T/tls.key
make_cert() {
	command -v openssl >/dev/null || fail "openssl is missing (deploy/install-deps.sh installs it)"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=milometer-test \
		-keyout "$T/tls.key" -out "$T/tls.crt" 2>/dev/null || fail "openssl req"
}

# --- the agent -------------------------------------------------------------

# start_agent [EXTRA ARGS]: the agent on $T/manifests, tracing nginx by
# default (PROXY_EXE), ready when /readyz answers 200. It runs under
# agent_ns.sh (private bpffs: no clash with another agent's pins, leftover
# pins fail the test); MM_IT_SHARED_BPFFS=1 runs it on the host's bpffs.
# MM_IT_CAPTURE=sock|sys-exit forces a capture mode (default: auto).
PROXY_EXE=${PROXY_EXE:-mm-it-nginx}
start_agent() {
	need_root
	need_bin milometer
	port_free $AGENT_PORT
	local ns="$IT_DIR/agent_ns.sh"
	if [ -n "${MM_IT_SHARED_BPFFS:-}" ]; then
		ns=
		[ -e "$PIN_DIR" ] &&
			fail "$PIN_DIR exists: another milometer agent is running or one left its pins"
	fi
	# a copy named mm-it-agent: scripts that stop "milometer" processes by
	# name (a demo, a smoke test) leave the test's agent alone
	install -m 0755 "$BIN/milometer" "$T/mm-it-agent"
	# the machine's steal from here on widens mmcheck's latency bounds
	# (its steal_bound_ms says why)
	export MM_IT_STEAL_BASE="$T/steal0"
	[ -f "$MM_IT_STEAL_BASE" ] || $PY "$IT_DIR/mmcheck.py" steal-mark "$MM_IT_STEAL_BASE"
	# AGENT_TARGET: how the agent finds the proxy (default by executable)
	[ ${#AGENT_TARGET[@]} -gt 0 ] || AGENT_TARGET=(--proxy-exe "$PROXY_EXE")
	# AGENT_SOURCE: where routes come from (default the manifests dir)
	[ ${#AGENT_SOURCE[@]} -gt 0 ] || AGENT_SOURCE=(--manifests "$T/manifests")
	$ns "$T/mm-it-agent" run "${AGENT_SOURCE[@]}" "${AGENT_TARGET[@]}" \
		--prometheus-listen "127.0.0.1:$AGENT_PORT" \
		--socket "$T/agent.sock" ${MM_IT_CAPTURE:+--capture "$MM_IT_CAPTURE"} \
		"$@" >"$T/agent.out" 2>&1 &
	AGENT_PID=$!
	AGENT_STARTED=1
	# AGENT_NO_WAIT=1: the caller watches /readyz itself
	[ -z "${AGENT_NO_WAIT:-}" ] || return 0
	local t0 end
	t0=$(date +%s%N)
	end=$(($(date +%s) + AGENT_READY_S))
	until curl -fsS -o /dev/null "$AGENT_URL/readyz" 2>/dev/null; do
		if ! alive "$AGENT_PID"; then
			wait "$AGENT_PID" && rc=0 || rc=$?
			AGENT_PID=
			tail -30 "$T/agent.out" >&2
			fail "the agent exited with status $rc before it was ready (BPF could not load?)"
		fi
		[ "$(date +%s)" -lt "$end" ] || fail "the agent was not ready within $AGENT_READY_S s"
		sleep 0.1
	done
	log "agent ready (pid $AGENT_PID) in $((($(date +%s%N) - t0) / 1000000)) ms"
}

# agent_detach: SIGTERM the agent; returns 0 when it detached cleanly
# (exit 0 within 10 s, no pins left), else says why and returns 1.
agent_detach() {
	local pid=$AGENT_PID rc=0 i
	[ -n "$pid" ] || return 0
	AGENT_PID=
	kill -TERM "$pid" 2>/dev/null
	for i in $(seq 100); do
		alive "$pid" || break
		sleep 0.1
	done
	if alive "$pid"; then
		log "the agent did not exit within 10 s of SIGTERM; killing it"
		kill -KILL "$pid"
		wait "$pid" 2>/dev/null
		return 1
	fi
	wait "$pid" || rc=$?
	case $rc in
	0) return 0 ;;
	99) log "the agent left BPF pins behind after SIGTERM" ;;
	*) log "the agent exited with status $rc on SIGTERM" ;;
	esac
	return 1
}

stop_agent() { agent_detach || fail "the agent did not detach cleanly"; }

metrics() { curl -fsS "$METRICS_URL"; }

# ctl ARGS: ask the test's agent over its debug socket.
ctl() { "$BIN/milometer" ctl --socket "$T/agent.sock" "$@"; }

# metric NAME [LABEL=VALUE]...: sum of the matching samples.
metric() { $PY "$IT_DIR/mmcheck.py" get --url "$METRICS_URL" "$@"; }

# expect_metric WANT WHAT METRIC [LABEL=VALUE...]: wait until the agent's
# METRIC summed over the matching series is WANT, else fail saying WHAT.
metric_is() {
	local want=$1
	shift
	[ "$(metric "$@")" = "$want" ]
}
expect_metric() {
	local want=$1 what=$2
	shift 2
	wait_for 20 metric_is "$want" "$@" ||
		fail "$what: agent says $(metric "$@"), want $want"
}

# compare_log [ARGS]: assert the agent's counts equal the access log's.
compare_log() {
	$PY "$IT_DIR/mmcheck.py" compare --url "$METRICS_URL" --log "$NGINX_LOG" "$@" ||
		fail "the agent's counts differ from the access log (above)"
}

# client.py for scripted requests
client() { $PY "$IT_DIR/client.py" "$@"; }

# in_agent_ns CMD...: CMD in the test agent's mount namespace, where its
# pins are ($PIN_DIR on its own bpffs, see agent_ns.sh), and under its root
# (-r: entering a mount namespace otherwise starts at the namespace's root,
# not a chroot's the tests may run in)
in_agent_ns() { nsenter -t "$AGENT_PID" -m -r "$@"; }
agent_bpftool() { in_agent_ns bpftool "$@"; }

# map_entries NAME: the entries of the test agent's map NAME (its full name,
# as pinned in $PIN_DIR), read with bpftool, not through the agent. Only
# the agent's own pin counts: another agent on the machine (another pin
# dir) has maps of the same names. Says why when there is no such pin.
map_entries() {
	agent_bpftool map dump pinned "$PIN_DIR/$1" -j 2>"$T/bpftool.err" |
		$PY -c 'import json,sys; print(len(json.load(sys.stdin)))' 2>/dev/null ||
		echo "no map $PIN_DIR/$1: $(head -1 "$T/bpftool.err")"
}

# agent_bpf_objs prog|map REGEX: "ID NAME" of the test agent's programs or
# maps pinned in $PIN_DIR under a name matching REGEX: its own, never those
# of another agent on the machine (bpftool's global lists hold both)
agent_bpf_objs() {
	local kind=$1 rx=$2 name
	for name in $(in_agent_ns ls "$PIN_DIR" 2>/dev/null | grep -E "$rx"); do
		agent_bpftool "$kind" show pinned "$PIN_DIR/$name" -j 2>/dev/null |
			$PY -c 'import json,sys; o=json.load(sys.stdin); print(o["id"], sys.argv[1])' "$name" 2>/dev/null ||
			true
	done
}

# agent_map NAME: bpftool's JSON for the running agent's own map NAME, by
# its pin (in agent_ns.sh's bpffs unless MM_IT_SHARED_BPFFS): never
# another agent's map of the same name.
agent_map() {
	local pre=()
	[ -n "${MM_IT_SHARED_BPFFS:-}" ] || pre=(nsenter -t "$AGENT_PID" -m -r)
	"${pre[@]}" bpftool -j map show pinned "$PIN_DIR/$1"
}

# url HOST PATH: a URL through the proxy with Host HOST; curl's --connect-to
# keeps the name out of DNS.
px() {
	local host=$1 path=$2
	shift 2
	curl -sS -o /dev/null -w '%{http_code}\n' -H "Host: $host" "$@" \
		"http://127.0.0.1:$PROXY_PORT$path"
}

# mmlogcount [ROUTE]: requests in the nginx access log (for ROUTE).
mmlogcount() { $PY "$IT_DIR/mmcheck.py" logcount --log "$NGINX_LOG" "$@"; }

# metric_grew NAME BEFORE DELTA [LABEL=VALUE]...: the sum of NAME's
# matching samples is now at least BEFORE + DELTA.
metric_grew() {
	local name=$1 before=$2 delta=$3
	shift 3
	awk -v now="$(metric "$name" "$@")" -v b="$before" -v d="$delta" \
		'BEGIN { exit !(now >= b + d) }'
}
unparsed_grew() { metric_grew milometer_bpf_unparsed_total "$@"; }
