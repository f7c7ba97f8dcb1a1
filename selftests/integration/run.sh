#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Run every selftests/integration/test_*.sh, one at a time (they share
# ports and the BPF pin dir), each as its own test.
#   run.sh [FILTER]   only tests whose name contains FILTER
# Prints "ok   NAME" or "FAIL NAME" (then the tail of its log) per test and
# a closing "N passed, N failed"; exits 1 when any failed.
set -u
dir=$(cd "$(dirname "$0")" && pwd)
filter=${1:-}
logs=${MM_IT_LOGS:-$(mktemp -d /tmp/mm-it-logs.XXXXXX)}
mkdir -p "$logs"
pass=0
failed=0
for t in "$dir"/test_*.sh; do
	name=$(basename "$t" .sh)
	case "$name" in *"$filter"*) ;; *) continue ;; esac
	start=$(date +%s)
	if timeout -k 10 300 bash "$t" >"$logs/$name.log" 2>&1; then
		printf 'ok   %-28s %3ss\n' "$name" $(($(date +%s) - start))
		pass=$((pass + 1))
	else
		rc=$?
		printf 'FAIL %-28s %3ss (exit %d, log %s)\n' "$name" \
			$(($(date +%s) - start)) $rc "$logs/$name.log"
		tail -40 "$logs/$name.log" | sed 's/^/    /'
		failed=$((failed + 1))
	fi
done
echo "$pass passed, $failed failed"
[ $failed -eq 0 ]
