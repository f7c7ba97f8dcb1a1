#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The bounded-loop build of the data path (kernels without bpf_loop, before
# 5.17: docs/kernel-support.md), forced on this kernel with
# MILOMETER_BPF_LOOPS=bounded: it is reported (startup log, ctl status, the
# milometer_capture_loops gauge), capture is sys-exit, and the per-route
# counts still equal nginx's access log exactly. The kernel matrix's 5.10
# leg runs the same build without forcing it.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx

# an unknown value is refused, naming the two that exist
# (in the tests' private bpffs: the pin directory of another agent is not touched)
if MILOMETER_BPF_LOOPS=sideways "$IT_DIR/agent_ns.sh" "$BIN/milometer" run --manifests "$T/manifests" \
	--proxy-exe "$PROXY_EXE" --prometheus-listen "" >"$T/bad.out" 2>&1; then
	fail "MILOMETER_BPF_LOOPS=sideways was accepted"
fi
grep -q 'use bpf_loop or bounded' "$T/bad.out" || fail "no usable message: $(cat "$T/bad.out")"

export MILOMETER_BPF_LOOPS=bounded
start_agent
unset MILOMETER_BPF_LOOPS
grep -q 'attached (capture mode sys-exit, loops bounded)' "$T/agent.out" ||
	fail "startup log: $(grep attached "$T/agent.out")"
ctl status | grep -q 'capture mode: sys-exit, loops: bounded' ||
	fail "ctl status: $(ctl status)"
ctl --json status | grep -q '"loops":"bounded"' || fail "ctl --json status: $(ctl --json status)"
expect_metric 1 "the loops gauge" milometer_capture_loops loops=bounded

log "wrk: 3 s, 4 connections, 11 requests in rotation"
wrk -t2 -c4 -d3s -s "$IT_DIR/wrk_mix.lua" "http://127.0.0.1:$PROXY_PORT/" |
	tee "$T/wrk.txt"
[ "$(px www.shop.test /)" = 200 ] || fail "www.shop.test / did not answer 200"
[ "$(px api.example.com /v2)" = 404 ] || fail "api.example.com /v2 should be unmatched"
compare_log
