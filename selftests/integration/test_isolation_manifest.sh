#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# One invalid rule never costs its neighbours. A manifest file holds a
# route whose second rule has a regular expression RE2 refuses and,
# beside it, a good route. `check` says the route is PartiallyInvalid
# (Dropped Rule 1, file:line) and exits 1; `explain` answers for both
# routes; the agent drops the rule alone, logs why, and
# counts both routes exactly as nginx's access log does, including
# requests the dropped rule would have taken (unmatched, as in nginx,
# whose configuration comes from the same compiled table). A third route
# whose only rule is invalid is left out whole. The agent's self-metrics
# count what it dropped: one rule, one object.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
cat >"$T/manifests/mixed.yaml" <<'YAML'
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: iso
  namespace: apps
spec:
  parentRefs: [{name: gw, namespace: infra}]
  hostnames: ["iso.test"]
  rules:
  - matches: [{path: {type: Exact, value: /ok}}]
    backendRefs: [{name: static, port: 18182}]
  - matches: [{path: {type: RegularExpression, value: "/re/(.{0,255}){0,255}"}}]
    backendRefs: [{name: py, port: 18181}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: good
  namespace: apps
spec:
  parentRefs: [{name: gw, namespace: infra}]
  hostnames: ["good.test"]
  rules:
  - backendRefs: [{name: static, port: 18182}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: broken
  namespace: apps
spec:
  parentRefs: [{name: gw, namespace: infra}]
  hostnames: ["broken.test"]
  rules:
  - matches: [{path: {type: Pathprefix, value: /}}]
    backendRefs: [{name: static, port: 18182}]
YAML

rc=0
"$BIN/milometer" check --manifests "$T/manifests" >"$T/check.out" 2>&1 || rc=$?
[ $rc = 1 ] || fail "check exits $rc on a dropped rule, want 1: $(cat "$T/check.out")"
grep -q "PartiallyInvalid True    UnsupportedValue       Dropped Rule 1: .*/mixed.yaml:12: invalid regular expression" "$T/check.out" ||
	fail "check does not report the dropped rule: $(cat "$T/check.out")"
grep -A2 "mixed.yaml:15: HTTPRoute apps/good" "$T/check.out" | grep -q "Accepted      True    Accepted" ||
	fail "check does not accept the good route beside it: $(cat "$T/check.out")"
for c in "http://iso.test/ok apps/iso rule 0" "http://good.test/x apps/good rule 0" \
	"http://iso.test/re/x unmatched"; do
	set -- $c
	got=$(explain "$1" 2>/dev/null) || true
	[ "$got" = "${*:2}" ] || fail "explain $1: '$got', want '${*:2}'"
done
start_backends
start_nginx
start_agent
grep -q "HTTPRoute apps/iso: Dropped Rule 1: .*mixed.yaml:12: invalid regular expression" "$T/agent.out" ||
	fail "the agent does not log the dropped rule: $(tail -5 "$T/agent.out")"
# the manifests above drop exactly one rule alone and leave one route out
expect_metric 1 "HTTPRoute rules dropped alone" milometer_routes_rules_dropped
expect_metric 1 "objects left out" milometer_routes_objects_rejected
[ "$(grep -c "Dropped Rule" "$T/agent.out")" = 1 ] ||
	fail "the agent logs $(grep -c "Dropped Rule" "$T/agent.out") dropped rules, want 1"
for c in "iso.test /ok 400" "good.test /x 300" "iso.test /re/x 200"; do
	set -- $c
	hey -n "$3" -c 4 -host "$1" "http://127.0.0.1:$PROXY_PORT$2" >"$T/hey.txt"
	grep -q "responses" "$T/hey.txt" || fail "hey $1$2: $(cat "$T/hey.txt")"
done
compare_log --expect-total 900
expect_metric 400 "iso's good rule" envoy_http_downstream_rq_total k8s_httproute_name=iso
expect_metric 300 "the good route" envoy_http_downstream_rq_total k8s_httproute_name=good
expect_metric 200 "the dropped rule's requests" envoy_http_downstream_rq_total k8s_httproute_name=unmatched
stop_agent
