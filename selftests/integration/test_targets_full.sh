#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A full mm_targets is counted, never silent: the agent's mm_targets is
# shrunk (MILOMETER_TEST_MAX_TARGETS) to nginx's master and two workers,
# so every later proxy process the BPF side tries to add fails. Each such
# process is still traced, on the default route table, and counted in
# milometer_bpf_targets_full_total: a process that execs the proxy's name
# (the exec hook's update) and the two workers an nginx reload forks (the
# fork hook's). Ground truth: bpftool's view of the map, the processes
# this script starts.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
wait_for 10 bash -c "[ \$(pgrep -c -x $PROXY_EXE) -eq 3 ]" ||
	fail "want nginx's master and 2 workers named $PROXY_EXE: $(pgrep -a -x "$PROXY_EXE")"
export MILOMETER_TEST_MAX_TARGETS=3
start_agent

# entries / max_entries of the agent's mm_targets, as bpftool shows them
targets_map() {
	agent_map mm_targets | $PY -c '
import json, sys
m = json.load(sys.stdin)
print(m["id"], m["max_entries"])'
}
read -r id max <<<"$(targets_map)"
[ -n "$id" ] || fail "bpftool shows no mm_targets map of the agent"
[ "$max" = 3 ] || fail "mm_targets max_entries $max, want 3"
entries() { bpftool -j map dump id "$id" | $PY -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
[ "$(entries)" = 3 ] || fail "mm_targets holds $(entries) processes, want 3 (full)"
expect_metric 0 "nothing failed yet" milometer_bpf_targets_full_total

# the exec hook: a process named like the proxy
mkdir -p "$T/impostor"
cp /bin/sleep "$T/impostor/$PROXY_EXE"
start_bg impostor "$T/impostor/$PROXY_EXE" 600
expect_metric 1 "exec of $PROXY_EXE into a full mm_targets" milometer_bpf_targets_full_total

# the fork hook: a reload forks two workers while the old two still run
nginx_reload
expect_metric 3 "two nginx workers forked into a full mm_targets" milometer_bpf_targets_full_total
log "milometer_bpf_targets_full_total $(metric milometer_bpf_targets_full_total): one exec and two forks that found mm_targets full"
