#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Reviews and time per /metrics scrape under --metrics-auth kubernetes, for
# N tenant namespaces x M routes (bin/bench_authz), against the test API
# server (selftests/tools/k8s_apiserver.py) with the callers bench_authz
# expects. Needs no root. The counts are the model's (independent of the
# server); the times are this Python stand-in's, a real kube-apiserver
# answers a review in well under a millisecond of its own CPU.
#   authz.sh [N M]...     default: 1 20, 10 20, 10 100
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/selftests/k8s/lib.sh"
[ -x "$ROOT/bin/bench_authz" ] || fail "build bin/bench_authz first (make -j2 bin/bench_authz)"
[ $# -ge 2 ] || set -- 1 20 10 20 10 100
while [ $# -ge 2 ]; do
	n=$1 m=$2
	shift 2
	names=$(python3 -c "import json; print(json.dumps(['r%d' % i for i in range($m)]))")
	cat >"$T/authz.json" <<EOJ
{"users": {"tok-full": {"username": "prom", "groups": ["system:authenticated"]},
           "tok-ns": {"username": "ns-reader", "groups": ["system:authenticated"]},
           "tok-names": {"username": "name-reader", "groups": ["system:authenticated"]},
           "tok-none": {"username": "nobody", "groups": ["system:authenticated"]}},
 "rules": [{"users": ["prom"], "verbs": ["get"], "nonResourceURLs": ["/metrics"]},
           {"users": ["ns-reader"], "verbs": ["get"], "apiGroups": ["gateway.networking.k8s.io"],
            "resources": ["httproutes"], "namespaces": ["t0"]},
           {"users": ["name-reader"], "verbs": ["get"], "apiGroups": ["gateway.networking.k8s.io"],
            "resources": ["httproutes"], "namespaces": ["t0"], "resourceNames": $names}]}
EOJ
	if [ -n "${API_PID:-}" ]; then
		ctl /ctl/authz "$(cat "$T/authz.json")" >/dev/null
	else
		start_apiserver --authz "$T/authz.json"
	fi
	"$ROOT/bin/bench_authz" --kubeconfig "$KUBECONFIG" --tenants "$n" --routes "$m" ||
		fail "bench_authz $n x $m"
done
