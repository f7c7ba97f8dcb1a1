#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Parser steps per bpf_loop callback (bpf/milometer.h MM_PARSE_STEPS_*):
# MILOMETER_BPF_PARSE_STEPS asks for a number, an impossible one is refused;
# when the kernel's verifier finds the data path too large (E2BIG) with the
# steps asked for, the loader says so and loads it with fewer, down to the
# number the verifier takes. Whatever number is loaded is reported (startup
# log, ctl status, milometer_capture_parse_steps), and the per-route counts
# equal nginx's access log exactly, with the most steps and with one.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx

if MILOMETER_BPF_PARSE_STEPS=9 "$IT_DIR/agent_ns.sh" "$BIN/milometer" run --manifests "$T/manifests" \
	--proxy-exe "$PROXY_EXE" --prometheus-listen "" >"$T/bad.out" 2>&1; then
	fail "MILOMETER_BPF_PARSE_STEPS=9 was accepted"
fi
grep -q 'MILOMETER_BPF_PARSE_STEPS=9: use 1 to 4' "$T/bad.out" || fail "no usable message: $(cat "$T/bad.out")"

# steps_loaded: what ctl --json status says the agent loaded
steps_loaded() { ctl --json status | sed -n 's/.*"parse_steps":\([0-9]*\).*/\1/p'; }

# run_with ASKED: the agent asked for ASKED steps, a wrk mix, exact counts
run_with() {
	local asked=$1 got k
	: >"$NGINX_LOG"
	MILOMETER_BPF_PARSE_STEPS=$asked start_agent
	got=$(steps_loaded)
	[ -n "$got" ] && [ "$got" -ge 1 ] && [ "$got" -le "$asked" ] ||
		fail "asked for $asked steps, ctl status says '$got'"
	# every number above the one loaded was refused by the verifier, said so
	for k in $(seq $((got + 1)) "$asked"); do
		grep -q "too large (E2BIG) with $k parser steps per callback; loading it with $((k - 1))" "$T/agent.out" ||
			fail "loaded $got of $asked steps without saying why $k was not: $(grep -i 'steps\|E2BIG' "$T/agent.out")"
	done
	[ "$got" = "$asked" ] || log "this kernel's verifier took $got parser steps of the $asked asked for"
	grep -q "attached (capture mode [^)]*), $got parser steps per callback;" "$T/agent.out" ||
		fail "startup log: $(grep attached "$T/agent.out")"
	ctl status | grep -q "parser steps: $got\$" || fail "ctl status: $(ctl status)"
	expect_metric "$got" "the parse steps gauge" milometer_capture_parse_steps
	log "wrk: 3 s, 4 connections, 11 requests in rotation, $got parser steps"
	wrk -t2 -c4 -d3s -s "$IT_DIR/wrk_mix.lua" "http://127.0.0.1:$PROXY_PORT/" |
		tee "$T/wrk-$asked.txt"
	[ "$(px www.shop.test /)" = 200 ] || fail "www.shop.test / did not answer 200"
	compare_log
	stop_agent
}

run_with 4
run_with 1
