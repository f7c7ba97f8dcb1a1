#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Run every selftests/integration/test_*.sh, one at a time (they share
# ports and the BPF pin dir), each as its own test.
#   run.sh [FILTER...]   only tests whose name contains one of the FILTERs
# Prints "ok   NAME" or "FAIL NAME" (then the tail of its log) per test and
# a closing "N passed, N failed"; exits 1 when any failed.
set -u
dir=$(cd "$(dirname "$0")" && pwd)
filters=("$@")
logs=${MM_IT_LOGS:-$(mktemp -d /tmp/mm-it-logs.XXXXXX)}
mkdir -p "$logs"
# where a test keeps artefacts worth a look after it passed (screenshots)
export MM_IT_LOG_DIR=$logs
pass=0
failed=0
ports="${MM_IT_PROXY_PORT:-28080} 28181 28182 ${MM_IT_AGENT_PORT:-29464}
       ${MM_IT_PROM_PORT:-29090} ${MM_IT_SINK_PORT:-24318}"

# leftovers NAME: what a finished test left running (it must leave nothing)
leftovers() {
	local p left=""
	for p in $ports; do
		[ -z "$(ss -Hltn "sport = :$p" 2>/dev/null)" ] || left="$left port $p;"
	done
	for p in mm-it-nginx mm-it-haproxy mm-it-agent mm-static mm-it-caddy mm-static-tls mm-it-apache2 mm-static-srv mm-it-h2o; do
		! pgrep -x "$p" >/dev/null || left="$left process $p;"
	done
	[ -z "$left" ] || echo "$1 left behind:$left"
}
for t in "$dir"/test_*.sh; do
	name=$(basename "$t" .sh)
	if [ ${#filters[@]} -gt 0 ]; then
		want=
		for f in "${filters[@]}"; do
			case "$name" in *"$f"*) want=1 ;; esac
		done
		[ -n "$want" ] || continue
	fi
	start=$(date +%s)
	timeout -k 10 300 bash "$t" >"$logs/$name.log" 2>&1
	rc=$?
	left=$(leftovers "$name")
	if [ -n "$left" ]; then
		echo "$left" >>"$logs/$name.log"
		[ $rc -ne 0 ] || rc=1
	fi
	if [ $rc -eq 0 ]; then
		printf 'ok   %-28s %3ss\n' "$name" $(($(date +%s) - start))
		pass=$((pass + 1))
	else
		printf 'FAIL %-28s %3ss (exit %d, log %s)\n' "$name" \
			$(($(date +%s) - start)) $rc "$logs/$name.log"
		tail -40 "$logs/$name.log" | sed 's/^/    /'
		failed=$((failed + 1))
	fi
done
echo "$pass passed, $failed failed"
[ $failed -eq 0 ]
