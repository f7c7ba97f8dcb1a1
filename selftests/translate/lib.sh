# SPDX-License-Identifier: Apache-2.0
# Shared by selftests/translate/test_*.sh: a scratch dir, pass/fail counts.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$ROOT/bin
TR_DIR=$ROOT/selftests/translate
T=$(mktemp -d /tmp/mm-translate.XXXXXX)
trap 'rm -rf "$T"' EXIT
npass=0
nfail=0
ok() { echo "ok   $*"; npass=$((npass + 1)); }
bad() { echo "FAIL $*"; nfail=$((nfail + 1)); }
check() { # check NAME CMD...: passes when CMD succeeds
	local name=$1
	shift
	if "$@" >"$T/out" 2>&1; then ok "$name"; else bad "$name"; sed 's/^/    /' "$T/out" | head -30; fi
}
refute() { # refute NAME CMD...: passes when CMD fails
	local name=$1
	shift
	if "$@" >"$T/out" 2>&1; then bad "$name (accepted)"; else ok "$name"; fi
}
finish() { echo "$npass passed, $nfail failed"; [ $nfail -eq 0 ]; }
