#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Pipelining: the client writes N requests in ONE send on one connection and
# reads N responses. Some runs are longer than the agent's per-connection
# in-flight depth (MM_PIPELINE_DEPTH, 32 in bpf/milometer.h): the requests
# past it take the overflow path (counted, untimed, milometer_bpf_
# pipeline_full_total grows) and must still be counted exactly.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
start_agent
A=127.0.0.1:$PROXY_PORT
# the depth the BPF program was built with, read from its ABI header
depth=$(sed -n 's/^#define MM_PIPELINE_DEPTH *\([0-9]*\).*/\1/p' "$IT_DIR/../../bpf/milometer.h")
[ -n "$depth" ] || fail "MM_PIPELINE_DEPTH not found in bpf/milometer.h"
full0=$(metric milometer_bpf_pipeline_full_total)
n=0
pipe() {
	local want=$1 out
	shift
	out=$(client send "$A" --pipeline --count "$want" "$@")
	log "pipeline $want $*: $out"
	case "$out" in "responses $want "*) ;; *) fail "client read: $out" ;; esac
	n=$((n + want))
}
pipe 4 --host api.example.com --path /v1/status
pipe 20 --host api.example.com --path /v1/status
pipe 20 --host www.shop.test --path '/cart/1?chunked=1'
pipe 12 --host foo.example.com --path /x/s500
pipe 10 --host nohost.test --path /
pipe 8 --host api.example.com --path /v1/orders --method POST --body 'a=1&b=2'
pipe 16 --host canary.example.com --path /c -H 'X-Canary: 1'
# past the depth: one more than it, and twice it
pipe $((depth + 1)) --host api.example.com --path /v1/status
pipe $((depth * 2)) --host www.shop.test --path '/cart/2'
# (self metrics refresh once a second: poll)
wait_for 10 metric_grew milometer_bpf_pipeline_full_total "$full0" 1 ||
	fail "no request took the overflow path past depth $depth (pipeline_full $full0 -> $(metric milometer_bpf_pipeline_full_total))"
log "pipeline_full: $full0 -> $(metric milometer_bpf_pipeline_full_total) (depth $depth)"
# pipelined requests wait in nginx's buffer: nginx starts $request_time when
# it takes a request up, the agent (as Envoy) at its first byte received, so
# the agent's sums are longer by the queueing; reported, not asserted.
compare_log --expect-total $n --latency-info
