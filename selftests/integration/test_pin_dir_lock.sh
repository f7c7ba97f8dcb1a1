#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# One agent per pin directory. A second agent started on the pin directory
# of a running one (same bpffs, same --pin-dir) exits at once with a
# message naming the directory and the running agent's pid, and leaves the
# running agent alone: its pins stay, it stays ready and keeps counting
# nginx's traffic exactly. The lock goes with the process: after the first
# agent is SIGKILLed (its pins left behind), the next agent on the
# directory starts, and detaches cleanly. Both agents share the private
# bpffs of agent_ns.sh's mount namespace (entered with nsenter).
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
command -v nsenter >/dev/null || fail "nsenter is missing (util-linux)"
use_manifests base
start_backends
start_nginx
start_agent
NS_PID=$AGENT_PID
wait_for 5 pgrep -P "$NS_PID" -x mm-it-agent || fail "no mm-it-agent under agent_ns.sh"
A=$(pgrep -P "$NS_PID" -x mm-it-agent)
# keeps the mount namespace (and its bpffs) after the first agent is gone
start_bg ns-holder nsenter -t "$NS_PID" -m sleep 600
HOLDER=$LAST_PID
in_agent_ns() { [ "$(readlink /proc/$HOLDER/ns/mnt)" = "$(readlink /proc/$NS_PID/ns/mnt)" ]; }
wait_for 5 in_agent_ns || fail "nsenter did not enter the agent's mount namespace"
inns() { nsenter -t "$HOLDER" -m "$@"; }
pins() { inns ls -A "$PIN_DIR" 2>/dev/null | sort | tr '\n' ' '; }
before=$(pins)
[ -n "$before" ] || fail "the running agent has no pins in $PIN_DIR"

# the second agent: another port and socket, the same pin directory
rc=0
timeout 30 nsenter -t "$HOLDER" -m "$T/mm-it-agent" run --manifests "$T/manifests" \
	--proxy-exe "$PROXY_EXE" --prometheus-listen "127.0.0.1:$((AGENT_PORT + 1))" \
	--socket "$T/agent2.sock" >"$T/agent2.out" 2>&1 || rc=$?
[ $rc -ne 124 ] || fail "a second agent on $PIN_DIR was still running after 30 s: $(tail -3 "$T/agent2.out")"
[ $rc -ne 0 ] || fail "a second agent on $PIN_DIR exited 0"
grep -q "$PIN_DIR" "$T/agent2.out" || fail "the refusal does not name $PIN_DIR: $(cat "$T/agent2.out")"
grep -q "pid $A\b" "$T/agent2.out" || fail "the refusal does not name the running agent's pid $A: $(cat "$T/agent2.out")"
grep -q "attached" "$T/agent2.out" && fail "the second agent attached: $(cat "$T/agent2.out")"
log "refused (exit $rc): $(grep -m1 "$PIN_DIR" "$T/agent2.out")"
[ "$(pins)" = "$before" ] || fail "the running agent's pins changed: $before -> $(pins)"
curl -fsS -o /dev/null "$AGENT_URL/readyz" || fail "the running agent is no longer ready"
hey -n 200 -c 2 -host api.example.com "http://127.0.0.1:$PROXY_PORT/v1/status" >/dev/null
compare_log --ignore-unrouted --expect-total 200

# a crash releases the lock
kill -KILL "$A"
wait "$NS_PID" 2>/dev/null || true
AGENT_PID=
[ -n "$(pins)" ] || fail "no pins left after SIGKILL: the crash case is not exercised"
nsenter -t "$HOLDER" -m "$T/mm-it-agent" run --manifests "$T/manifests" \
	--proxy-exe "$PROXY_EXE" --prometheus-listen "127.0.0.1:$AGENT_PORT" \
	--socket "$T/agent.sock" >"$T/agent3.out" 2>&1 &
C=$!
ready() { curl -fsS -o /dev/null "$AGENT_URL/readyz"; }
if ! wait_for 30 ready; then
	cat "$T/agent3.out" >&2
	fail "no agent could start on $PIN_DIR after the one holding it was killed"
fi
log "after SIGKILL of $A, agent $C started on $PIN_DIR"
kill -TERM "$C"
rc=0
wait "$C" || rc=$?
[ $rc -eq 0 ] || fail "the agent on the released pin directory exited $rc: $(tail -3 "$T/agent3.out")"
[ -z "$(pins)" ] || fail "pins left after a clean exit: $(pins)"
