#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# haproxy with 4 threads (sessions move between threads, several threads
# write to one upstream pool). Ground truth is the clients' own counts:
# hey -n N completes exactly N requests, each answer checked.
PROXY_EXE=mm-it-haproxy
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer
use_manifests base
start_backends
start_haproxy 4
start_agent # after haproxy: its threads exist already
A=http://127.0.0.1:$PROXY_PORT

# load N CODE HEY-ARGS...: N requests that must all answer CODE (hey sends
# n/c per worker: keep N a multiple of -c)
load() {
	local n=$1 code=$2
	shift 2
	hey -n "$n" "$@" >"$T/hey.txt"
	grep -q "\[$code\].*$n responses" "$T/hey.txt" ||
		fail "hey $*: not $n x $code: $(grep -A5 'Status code' "$T/hey.txt")"
}
load 3000 200 -c 8 -host api.example.com "$A/v1/status"
load 2000 200 -c 8 -host www.shop.test "$A/cart/1"
load 1000 404 -c 4 -host nohost.test "$A/"
load 1000 500 -c 4 -disable-keepalive -host foo.example.com "$A/x/s500"
load 500 200 -c 10 -host canary.example.com -H 'X-Canary: 1' "$A/c"

rq=envoy_http_downstream_rq_total
up=envoy_cluster_upstream_rq_total
wait_for 20 metric_grew $rq 0 7500 || fail "agent counted $(metric $rq) of 7500"
check() {
	local want=$1 name=$2
	shift 2
	local got
	got=$(metric "$name" "$@")
	log "$name $*: client $want, agent $got"
	[ "$got" = "$want" ] || bad=1
}
bad=0
check 7500 $rq
check 3000 $rq k8s_httproute_name=api http_response_status_code_class=2xx
check 2000 $rq k8s_httproute_name=web http_response_status_code_class=2xx
check 1000 $rq k8s_httproute_name=unmatched http_response_status_code_class=4xx
check 1000 $rq k8s_httproute_name=wild envoy_cluster_name=httproute/apps/wild/rule/1 \
	http_response_status_code_class=5xx
check 500 $rq k8s_httproute_name=wild envoy_cluster_name=httproute/apps/wild/rule/0
check 6500 $up
check 3000 $up k8s_httproute_name=api http_response_status_code_class=2xx
check 2000 $up k8s_httproute_name=web http_response_status_code_class=2xx
check 1000 $up k8s_httproute_name=wild envoy_cluster_name=httproute/apps/wild/rule/1 \
	http_response_status_code_class=5xx
check 500 $up k8s_httproute_name=wild envoy_cluster_name=httproute/apps/wild/rule/0
check 0 $up k8s_httproute_name=unmatched
[ $bad = 0 ] || fail "the agent's counts differ from the clients' (above)"
