#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# check_includes.py on small trees that break one rule each: it must fail,
# naming the offending include, and pass on the tree without it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
pass=0
fail=0

# tree NAME: a fresh git tree with the checker, the Makefile's pure folders
tree() {
	t=$(mktemp -d /tmp/mm-layout.XXXXXX)
	mkdir -p "$t/selftests/layout" "$t/agent/k8s" "$t/agent/node" "$t/policy/model" "$t/policy/util" "$t/bpf"
	cp "$here/check_includes.py" "$t/selftests/layout/"
	echo "AGENT_PURE_DIRS := agent/node" >"$t/Makefile"
	echo '#include "policy/model/m.h"' >"$t/agent/a.c"
	echo '/* model */' >"$t/policy/model/m.h"
	echo '/* util */' >"$t/policy/util/u.h"
	echo '#include "policy/util/u.h"' >"$t/agent/k8s/k.c"
	echo '/* node */' >"$t/agent/node/n.c"
	echo '/* client */' >"$t/agent/k8s/k.h"
}

# expect WHAT STATUS [GREP]: the checker's exit status, and a line it prints
expect() {
	local what=$1 want=$2 pattern=${3:-} out rc
	git -C "$t" init -q && git -C "$t" add -A
	out=$(python3 "$t/selftests/layout/check_includes.py" 2>&1)
	rc=$?
	if [ "$rc" -eq "$want" ] && { [ -z "$pattern" ] || grep -qF -- "$pattern" <<<"$out"; }; then
		echo "ok   $what"
		pass=$((pass + 1))
	else
		echo "FAIL $what: exit $rc (want $want), want a line with \"$pattern\":"
		sed 's/^/    /' <<<"$out"
		fail=$((fail + 1))
	fi
	rm -rf "$t"
}

tree
expect "a tree that keeps the rules passes" 0

tree
echo '#include "agent/a.h"' >>"$t/agent/k8s/k.h"
echo '#include "agent/k8s/k.h"' >"$t/agent/a.h"
expect "a cycle between folders fails" 1 "agent/k8s -> agent -> agent/k8s"

tree
echo '#include "agent/k8s/k.h"' >>"$t/policy/model/m.h"
expect "an include going up a layer fails" 1 'policy/model/m.h:2: #include "agent/k8s/k.h"'

tree
echo '#include "policy/model/m.h"' >>"$t/agent/k8s/k.c"
expect "the API client reaching past policy/source and policy/util fails" 1 'agent/k8s/k.c:2: #include "policy/model/m.h"'

tree
echo '#include <bpf/libbpf.h>' >>"$t/policy/model/m.h"
expect "policy/ reaching libbpf fails" 1 'policy/model/m.h:2: #include <bpf/libbpf.h>'

tree
echo '#include <bpf/bpf.h>' >>"$t/agent/node/n.c"
expect "an AGENT_PURE_DIRS folder reaching libbpf fails" 1 'agent/node/n.c:2: #include <bpf/bpf.h>'

tree
mkdir -p "$t/selftests/unit" && echo '/* test */' >"$t/selftests/unit/t.h"
echo '#include "selftests/unit/t.h"' >>"$t/agent/a.c"
expect "a product file including selftests/ fails" 1 'agent/a.c:2: #include "selftests/unit/t.h"'

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
