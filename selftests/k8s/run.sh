#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Kubernetes client tests that need no root: the test API server judged
# by real clients, then milometer's reflector against it, and the API cost
# figures. Each test_*.sh prints "N passed, N failed"; this sums them.
#   run.sh [FILTER]
set -u
dir=$(cd "$(dirname "$0")" && pwd)
pass=0
failn=0
# every test's temp dir (and so the arguments of what it starts) is under
# this run's own: what is left running is looked for there, never in
# another run's (a colleague's tests on the same machine)
MM_K8S_TMP=$(mktemp -d /tmp/mm-k8s-run.XXXXXX)
export MM_K8S_TMP
trap 'rm -rf "$MM_K8S_TMP"' EXIT
for t in "$dir"/test_*.sh; do
	name=$(basename "$t" .sh)
	case "$name" in *"${1:-}"*) ;; *) continue ;; esac
	echo "== $name"
	out=$(timeout -k 10 600 bash "$t" 2>&1)
	echo "$out"
	# a test leaves nothing running (its processes name its temp dir)
	left=$(pgrep -f "$MM_K8S_TMP/" | tr '\n' ' ')
	if [ -n "$left" ]; then
		echo "FAIL: $name left processes behind: $left"
		pkill -KILL -f "$MM_K8S_TMP/"
		failn=$((failn + 1))
	fi
	line=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -1)
	if [ -z "$line" ]; then
		failn=$((failn + 1))
		continue
	fi
	p=${line%% passed*}
	f=${line#*, }
	pass=$((pass + p))
	failn=$((failn + ${f%% failed*}))
done
echo "$pass passed, $failn failed"
[ $failn -eq 0 ]
