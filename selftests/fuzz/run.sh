#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run.sh BINDIR SECONDS TARGET...: run each libFuzzer target for SECONDS
# (two at a time on this 2-core budget), starting from its seed corpus in
# selftests/fuzz/corpus/TARGET. New inputs go to a scratch copy, never into
# the repository; a finding leaves its input in $FUZZ_WORK/crash-TARGET-*.
# One line per target ("ok"/"FAIL"), then "N passed, N failed".
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
bindir=$1 secs=$2
shift 2
work=${FUZZ_WORK:-$root/.output/fuzz/work}
mkdir -p "$work"

one() {
	local t=$1 bin=$bindir/fuzz_$1 seeds=$root/selftests/fuzz/corpus/$1
	local corpus=$work/corpus-$t log=$work/$t.log

	mkdir -p "$corpus"
	[ -d "$seeds" ] || seeds=
	# -timeout: one input taking 10 s is a finding (the issue's regex
	# case took 30 s); -rss_limit_mb: so is using 2 GiB.
	if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-max_len=65536 -print_final_stats=1 \
		-artifact_prefix="$work/crash-$t-" "$corpus" $seeds >"$log" 2>&1; then
		echo "ok   fuzz_$t ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs in ${secs}s)"
	else
		echo "FAIL fuzz_$t: see $log"
		grep -m3 -E 'ERROR|SUMMARY|Test unit written' "$log" | sed 's/^/    /'
	fi
}
export -f one
export bindir secs root work
printf '%s\n' "$@" | xargs -P 2 -I{} bash -c 'one {}' >"$work/results" 2>&1
cat "$work/results"
pass=$(grep -c '^ok ' "$work/results")
fail=$(grep -c '^FAIL ' "$work/results")
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -eq $# ]
