#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# allowedRoutes.namespaces.from: Selector, end to end with the real client:
# Gateway gw gets a listener for team.test that admits routes from
# namespaces labelled gw-access=yes; HTTPRoute teamx/team sits in a
# namespace without the label. `kubectl label namespace` (a patch on a core
# object) attaches it while nginx serves traffic, and removing the label
# detaches it again; the agent follows from its Namespace watch, without a
# restart. Counts per phase come from nginx's log (its Host column).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/k8s_api.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
k8s_start_api
k8s_base_objects teamx
cat <<'EOF2' | kc apply -f - >/dev/null || fail "kubectl apply of gw's team listener and teamx/team"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: milometer-test
  listeners:
  - {name: http, protocol: HTTP, port: 80, allowedRoutes: {namespaces: {from: All}}}
  - name: team
    protocol: HTTP
    port: 80
    hostname: team.test
    allowedRoutes:
      namespaces:
        from: Selector
        selector: {matchLabels: {gw-access: "yes"}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: team, namespace: teamx}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: team}]
  hostnames: ["team.test"]
  rules:
  - matches: [{path: {type: PathPrefix, value: /}}]
    backendRefs: [{name: static, port: 18182}]
EOF2
AGENT_SOURCE=(--kubeconfig "$T/kubeconfig")
start_agent
grep -q 'k8s: watching' "$T/agent.out" || fail "the agent did not use the API"

attached() { ctl routes | grep -q 'teamx/team'; }
team_hits() { grep -c $'\tteam\\.test\t' "$NGINX_LOG" || true; }
D=envoy_http_downstream_rq_total
send() { hey -n "$1" -c 4 -host team.test "http://127.0.0.1:$PROXY_PORT/x" >/dev/null; }

attached && fail "teamx/team attached before its namespace has the label"
send 100
wait_log_lines "$NGINX_LOG" 100 || fail "nginx logged $(log_lines "$NGINX_LOG") of 100"
n1=$(team_hits)
expect_metric "$n1" "team.test before the label (unmatched)" $D k8s_httproute_name=unmatched

kc label namespace teamx gw-access=yes >/dev/null || fail "kubectl label"
[ "$(kc get namespace teamx -o jsonpath='{.metadata.labels.gw-access}')" = yes ] ||
	fail "the label did not stick: $(kc get namespace teamx -o yaml)"
wait_for 20 attached || fail "teamx/team not attached after the label: $(ctl routes)"
send 200
wait_log_lines "$NGINX_LOG" 300 || fail "nginx logged $(log_lines "$NGINX_LOG") of 300"
n2=$(($(team_hits) - n1))
expect_metric "$n2" "team.test with the label" $D k8s_httproute_name=team k8s_namespace_name=teamx
expect_metric "$n1" "unmatched unchanged" $D k8s_httproute_name=unmatched

kc label namespace teamx gw-access- >/dev/null || fail "kubectl label (remove)"
wait_for 20 eval '! attached' || fail "teamx/team still attached without the label"
send 100
wait_log_lines "$NGINX_LOG" 400 || fail "nginx logged $(log_lines "$NGINX_LOG") of 400"
n3=$(($(team_hits) - n1 - n2))
expect_metric "$((n1 + n3))" "team.test after the label went" $D k8s_httproute_name=unmatched
expect_metric "$n2" "the route's count kept" $D k8s_httproute_name=team
