#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The agent in a memory cgroup with a 224 MiB limit, as a pod with
# resources.limits.memory: 224Mi: it reads the limit itself, lowers its
# caps to fit (and says so), exports the limit, the caps and their drivers
# as self-metrics (the per-node sizing figures a VPA uses), and still
# counts nginx traffic exactly. The limit is set by this script through the
# cgroup filesystem (ground truth), v2 memory.max or v1 memory.limit_in_bytes.
# 224 MiB: loading the BPF programs charges the verifier's memory to the
# cgroup (the peak this test logs). Measured on a 6.18 VM (v1 memory
# cgroup, kernel memory included): the agent starts under 188 MiB and is
# OOM-killed under 184, with the current object and the one before it
# alike, so 192 left too little room; a smaller limit is OOM-killed at start
# whatever the caps (the agent warns about it). The caps are still lowered.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
LIMIT=${MM_IT_MEM_LIMIT:-$((224 << 20))}

if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
	CGROOT=/sys/fs/cgroup
	CG=$CGROOT/mm-it-memlimit-$$
	mkdir "$CG"
	echo $LIMIT >"$CG/memory.max" || fail "cannot set memory.max (memory controller not enabled at the root?)"
elif [ -d /sys/fs/cgroup/memory ]; then
	CGROOT=/sys/fs/cgroup/memory
	CG=$CGROOT/mm-it-memlimit-$$
	mkdir "$CG"
	echo $LIMIT >"$CG/memory.limit_in_bytes"
else
	fail "no memory cgroup controller mounted"
fi
peak() { cat "$CG/memory.peak" "$CG/memory.max_usage_in_bytes" 2>/dev/null; printf "(kernel: %s) " "$(cat "$CG/memory.kmem.max_usage_in_bytes" 2>/dev/null)"; }
uncg() {
	log "peak memory of the agent's cgroup: $(peak) B"
	agent_detach || return 1
	echo $$ >"$CGROOT/cgroup.procs"
	rmdir "$CG" || log "could not remove $CG"
}
trap 'rc=$?; set +e; uncg || rc=1; (exit $rc); cleanup' EXIT

use_manifests base
start_backends
start_nginx
# only the agent (started by this shell from here on) goes into the cgroup
echo $$ >"$CG/cgroup.procs"
start_agent
echo $$ >"$CGROOT/cgroup.procs"
log "agent cgroup after start: usage $(cat "$CG/memory.current" "$CG/memory.usage_in_bytes" 2>/dev/null) B, kernel $(cat "$CG/memory.kmem.usage_in_bytes" 2>/dev/null; grep -E '^(kernel|slab|percpu|sock) ' "$CG/memory.stat" 2>/dev/null | tr '\n' ' ')"
grep -E '^(total_)?(rss|cache|shmem|mapped_file|anon|file) ' "$CG/memory.stat" >&2 || true
grep -q "memory limit $((LIMIT >> 20)) MiB" "$T/agent.out" ||
	fail "the agent did not report the $((LIMIT >> 20)) MiB limit: $(head -5 "$T/agent.out")"
log "$(grep 'memory limit' "$T/agent.out")"

got=$(metric milometer_process_memory_limit_bytes)
[ "${got%.*}" = $LIMIT ] || fail "milometer_process_memory_limit_bytes $got, want $LIMIT"
for cap in max_connections:16384 ringbuf_bytes:4194304 max_series_per_metric:10000 \
	otlp_queue_bytes:8388608; do
	v=$(metric milometer_cap "cap=${cap%%:*}")
	[ -n "$v" ] || fail "no milometer_cap{cap=${cap%%:*}}"
	[ "${v%.*}" -le "${cap#*:}" ] ||
		fail "cap ${cap%%:*} is $v, above its default ${cap#*:}: caps never go up"
	grep -q "${cap#*:} -> ${v%.*}" "$T/agent.out" ||
		fail "cap ${cap%%:*} = $v differs from what the agent logged"
	[ "${v%.*}" -eq "${cap#*:}" ] || lowered=$((${lowered:-0} + 1))
done
[ "${lowered:-0}" -ge 1 ] || fail "no cap lowered under a $((LIMIT >> 20)) MiB limit"

# The connection cap against the kernel's own view of the map: bpftool
# gives mm_conns' key and value sizes; one element costs less than twice
# their sum plus its headers (a kmalloc size class is under twice the
# request), so the cap must be at least the connections' 3/8 share of the
# budget the agent logged over that, or the configured cap.
budget_mib=$(sed -n 's/.*caps lowered to fit \([0-9]*\) MiB.*/\1/p' "$T/agent.out")
[ -n "$budget_mib" ] || fail "the agent did not log the budget its caps fit"
kv=$(agent_map mm_conns | $PY -c '
import json, sys
m = json.load(sys.stdin)
print(m["bytes_key"], m["bytes_value"])')
[ -n "$kv" ] || fail "bpftool shows no mm_conns map of the agent"
bound=$((2 * (${kv% *} + ${kv#* }) + 128))
want=$(((budget_mib << 20) * 3 / 8 / bound))
[ $want -le 16384 ] || want=16384
conns=$(metric milometer_cap cap=max_connections)
log "mm_conns key+value ${kv% *}+${kv#* } B: connection cap ${conns%.*}, at least $want (budget $budget_mib MiB, <= $bound B each)"
[ "${conns%.*}" -ge $want ] ||
	fail "connection cap ${conns%.*} under a $((LIMIT >> 20)) MiB limit: a connection is sized above $bound B, the most its ${kv% *}+${kv#* } B map entry costs"

metrics | grep -E '^milometer_(cap|bpf_connections|http_exchanges|process|series|export_queue)' >&2
hey -n 300 -c 4 -host api.example.com "http://127.0.0.1:$PROXY_PORT/v1/status" >/dev/null
hey -n 200 -c 2 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/cart/x" >/dev/null
compare_log --ignore-unrouted --expect-total 500
exchanges_at_least() { [ "$(metric milometer_http_exchanges_total)" -ge "$1" ]; }
# downstream and upstream legs: each request is two exchanges here
wait_for 10 exchanges_at_least 1000 ||
	fail "milometer_http_exchanges_total $(metric milometer_http_exchanges_total) after 500 proxied requests, want >= 1000"
req=$(metric milometer_http_exchanges_total)
metrics >"$T/metrics.txt"
for m in milometer_bpf_connections milometer_series_active \
	milometer_process_memory_usage_bytes milometer_process_cpu_time_seconds_total \
	milometer_export_queue_bytes; do
	grep -q "^$m[ {]" "$T/metrics.txt" || fail "self-metric $m missing"
done
rss=$(metric milometer_process_memory_usage_bytes)
log "under a $((LIMIT >> 20)) MiB limit: rss ${rss%.*} B, exchanges ${req%.*}, series $(metric milometer_series_active)"
