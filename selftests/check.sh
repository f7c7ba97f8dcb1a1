#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What `make check` runs once everything is built: the unit tests, the
# include graph's directions and the formatting, the unit tests again under ASan/UBSan, the fuzz targets, the BPF program tests, the
# Kubernetes client tests, then the integration tests (root: they load BPF
# and start real proxies) and the bounded kernel matrix (selftests/kernel:
# qemu + the host kernel). The last line sums them all: "N passed, N failed,
# N skipped" (a skip is never a pass); exit status 1 when anything failed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
total_pass=0
total_fail=0
total_skip=0
status=0

# tally OUTPUT_FILE NAME: add the runner's closing "N passed, N failed[, N
# skipped]", and keep its "FAIL" lines (with the "== file" heading above
# each) for the list printed last: a log's tail then names what failed.
tally() {
	local line p f s
	awk -v from="$2" '/^== /{head=substr($0, 4)} /^FAIL[ :]/{
		printf "  %s%s: %s\n", from, (head == "" ? "" : " " head), $0 }' "$1" >>"$fails"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -1)
	if [ -z "$line" ]; then
		echo "check: no 'N passed, N failed' line from $2: counted as a failure"
		echo "  $2: no 'N passed, N failed' line" >>"$fails"
		total_fail=$((total_fail + 1))
		return
	fi
	p=${line%% passed*}
	f=${line#*, }
	f=${f%% failed*}
	s=0
	case "$line" in *" skipped"*) s=${line##*failed, }; s=${s%% skipped*} ;; esac
	total_pass=$((total_pass + p))
	total_skip=$((total_skip + s))
	total_fail=$((total_fail + f))
}

out=$(mktemp /tmp/mm-check.XXXXXX)
fails=$(mktemp /tmp/mm-check-fails.XXXXXX)
trap 'rm -f "$out" "$fails"' EXIT

echo "== unit tests"
bin/unit_tests 2>&1 | tee "$out"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
tally "$out" bin/unit_tests

echo "== layout: include graph directions"
python3 selftests/layout/check_includes.py 2>&1 | tee "$out"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
tally "$out" selftests/layout/check_includes.py
selftests/layout/test_check_includes.sh 2>&1 | tee "$out"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
tally "$out" selftests/layout/test_check_includes.sh

echo "== formatting: make format-check"
if make -s --no-print-directory format-check; then
	total_pass=$((total_pass + 1))
else
	echo "  make format-check" >>"$fails"
	total_fail=$((total_fail + 1))
	status=1
fi

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

# The parser, exchange bookkeeping and route lookup as BPF programs run by
# BPF_PROG_TEST_RUN (root). A test object that does not load fails every
# test, never skips.
echo "== BPF program tests"
bin/bpf_tests 2>&1 | tee "$out"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
tally "$out" bin/bpf_tests

# once, minutes, outside the per-test timeouts: the tools the tests build
# from Go modules (promtool, kube-state-metrics, the Collector), with the Go
# toolchain selftests/tools/go_toolchain.sh fetches when the machine has none
for b in build_promtool.sh build-ksm.sh build-otelcol.sh; do
	selftests/tools/$b >/dev/null ||
		echo "check: selftests/tools/$b failed (above): the tests that use its tool fail"
done
echo "== Kubernetes client tests (no root)"
selftests/k8s/run.sh 2>&1 | tee "$out"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
tally "$out" selftests/k8s/run.sh

echo "== translation tests (no root; real promtool)"
selftests/translate/run.sh 2>&1 | tee "$out"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
tally "$out" selftests/translate/run.sh

echo "== integration tests"
selftests/integration/run.sh "${T:-}" 2>&1 | tee "$out"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
tally "$out" selftests/integration/run.sh

# The fallback capture mode (kernels before 6.3) on the tests that exercise
# the parser, the connection lifecycle, TLS, h2 and two Gateways; the
# default mode ran above.
if [ -z "${T:-}" ]; then
	echo "== integration tests, --capture sys-exit"
	MM_IT_CAPTURE=sys-exit selftests/integration/run.sh nginx_counts \
		haproxy_counts pipelining bytewise keepalive chunked fd_reuse \
		midrequest_close close_race oversize garbage head expect_continue \
		nginx_reload capture_lifecycle tls_upstream tls_capture h2_capture grpc_capture tls_capture_go h2c_upgrade k8s_two_gateways listener 2>&1 | tee "$out"
	[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
	tally "$out" "selftests/integration/run.sh (sys-exit)"
fi

# bounded: the 5.10, 6.1 and 6.12 x86-64 guests and the host kernel, a few
# requests per route (the arm64 legs are `make kernel-matrix` only); a
# kernel that cannot be downloaded or booted counts as a failure
echo "== kernel matrix (quick)"
KERNEL_MATRIX_QUICK=1 selftests/kernel/run.sh 2>&1 | tee "$out"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
tally "$out" selftests/kernel/run.sh

[ $total_fail -eq 0 ] || status=1
if [ -s "$fails" ]; then
	echo "failed:"
	cat "$fails"
fi
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
exit $status
