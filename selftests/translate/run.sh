#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The translation tests that need no root (real promtool, real tools built
# by selftests/tools/build-*.sh). Each test_*.sh prints "N passed, N failed";
# this sums them.
#   run.sh [FILTER]
set -u
dir=$(cd "$(dirname "$0")" && pwd)
pass=0
failn=0
for t in "$dir"/test_*.sh; do
	name=$(basename "$t" .sh)
	case "$name" in *"${1:-}"*) ;; *) continue ;; esac
	echo "== $name"
	out=$(timeout -k 10 900 bash "$t" 2>&1)
	echo "$out"
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
