#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The debug socket never stalls the agent's event loop (the thread that
# drains the ring buffer): with broken clients holding the socket (silent
# ones that never send a command, greedy ones that ask for every series and
# never read), `milometer ctl` still answers at once, the load sent
# meanwhile is counted exactly (nginx's access log is the ground truth),
# the stuck clients are dropped after their time, and every --json answer
# parses as JSON.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
start_agent

# series to render: every route of the base manifests
for h in api.example.com www.shop.test foo.example.com nohost.test; do
	px "$h" / >/dev/null
done
wait_for 10 compare_log --no-latency >/dev/null 2>&1 || true

start_bg stuck $PY "$IT_DIR/stuck_ctl.py" "$T/agent.sock" --silent 4 --greedy 3
wait_for 10 grep -q '^held 7' "$T/stuck.out" || fail "stuck clients: $(cat "$T/stuck.out")"
log "7 stuck clients hold the debug socket"

# ctl answers while they hold it (it once waited 1 s per silent client)
t0=$(date +%s%N)
ctl --json status >"$T/status.json" || fail "ctl status failed while clients were stuck"
ms=$((($(date +%s%N) - t0) / 1000000))
log "ctl status with 7 stuck clients: $ms ms"
[ "$ms" -lt 1000 ] || fail "ctl status took $ms ms with stuck clients: the event loop waits on them"

# load meanwhile: counted exactly, so the drain kept going
hey -n 2000 -c 8 -host api.example.com \
	"http://127.0.0.1:$PROXY_PORT/v1/status" >"$T/hey.txt"
grep -q '\[200\].*2000 responses' "$T/hey.txt" || fail "hey: $(cat "$T/hey.txt")"
compare_log --no-latency

# the stuck clients are dropped after their time (5 s), not held forever
wait_for 15 sh -c "[ \$(grep -c '^closed' '$T/stuck.out') -ge 4 ]" ||
	fail "the agent kept silent clients open: $(cat "$T/stuck.out")"

# every --json answer is JSON
for c in status targets routes series stats policies; do
	ctl --json "$c" >"$T/$c.json" || fail "ctl --json $c failed"
	$PY -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/$c.json" ||
		fail "ctl --json $c is not JSON: $(head -c 400 "$T/$c.json")"
done
grep -q '"envoy.http.downstream_rq_total"' "$T/series.json" ||
	fail "ctl --json series lacks the source series"
# every program meant to be attached is (mm_sock_io, mm_fb_io are only tail-called)
$PY -c 'import json,sys; s = json.load(open(sys.argv[1]))
sys.exit(not (s["programs"] >= 6 and s["programs_attached"] == s["programs"]))' \
	"$T/status.json" || fail "programs attached: $(cat "$T/status.json")"
log "ctl --json: all six commands parse"

# root-only: mode 0600, owned by root, and ctl says so to anyone else (the
# test directory opened for traversal so only the socket's mode decides)
[ "$(stat -c '%a %u' "$T/agent.sock")" = "600 0" ] ||
	fail "debug socket is $(stat -c '%a uid %u' "$T/agent.sock"), not 600 uid 0"
chmod 0711 "$T"
out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$T/mm-it-agent" ctl --socket "$T/agent.sock" status 2>&1) &&
	fail "a non-root user read the debug socket: $out"
chmod 0700 "$T"
echo "$out" | grep -q 'root-only' || fail "ctl as nobody does not say the socket is root-only: $out"
log "as nobody: $out"
