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
for t in "$dir"/test_*.sh; do
	name=$(basename "$t" .sh)
	case "$name" in *"${1:-}"*) ;; *) continue ;; esac
	echo "== $name"
	out=$(timeout -k 10 600 bash "$t" 2>&1)
	echo "$out"
	# a test leaves nothing running (its processes name its /tmp/mm-k8s.*)
	left=$(pgrep -f '/tmp/mm-k8s\.' | tr '\n' ' ')
	if [ -n "$left" ]; then
		echo "FAIL: $name left processes behind: $left"
		pkill -KILL -f '/tmp/mm-k8s\.'
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
