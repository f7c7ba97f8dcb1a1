#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What `make check` runs once everything is built: the unit tests, the unit
# tests again under ASan/UBSan, the fuzz targets, then the integration tests
# (root: they load BPF and start real proxies). The last line sums them all:
# "N passed, N failed"; exit status 1 when anything failed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
total_pass=0
total_fail=0
status=0

# tally OUTPUT_FILE: add the runner's closing "N passed, N failed".
tally() {
	local line p f
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -1)
	if [ -z "$line" ]; then
		echo "check: no 'N passed, N failed' line from $2: counted as a failure"
		total_fail=$((total_fail + 1))
		return
	fi
	p=${line%% passed*}
	f=${line#*, }
	f=${f%% failed*}
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
}

out=$(mktemp /tmp/mm-check.XXXXXX)
trap 'rm -f "$out"' EXIT

echo "== unit tests"
bin/unit_tests 2>&1 | tee "$out"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
tally "$out" bin/unit_tests

# Sanitizer builds: the unit tests under ASan/UBSan, then every libFuzzer
# target for FUZZ_CHECK_TIME seconds (one pass per target; any finding
# fails). Both build apart in .output/asan and .output/fuzz.
echo "== unit tests under ASan/UBSan"
# T= : T filters the integration tests only
make -s --no-print-directory asan-unit T= 2>&1 | tee "$out"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
tally "$out" "make asan-unit"

echo "== fuzz targets (${FUZZ_CHECK_TIME:-20} s each)"
make -s --no-print-directory fuzz FUZZ_TIME="${FUZZ_CHECK_TIME:-20}" 2>&1 | tee "$out"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
tally "$out" "make fuzz"

echo "== integration tests"
selftests/integration/run.sh "${T:-}" 2>&1 | tee "$out"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
tally "$out" selftests/integration/run.sh

[ $total_fail -eq 0 ] || status=1
echo "$total_pass passed, $total_fail failed"
exit $status
