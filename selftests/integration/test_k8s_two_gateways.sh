#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Two Gateways on one node, each served by its own proxy pod: nginx runs
# Gateway infra/gw, haproxy runs infra/gw2, in two cgroups shaped as the
# systemd driver + containerd lay pods out. Both Gateways have a route for
# api.example.com, each its own; www.shop.test is routed on gw only. Every
# request must be attributed within the route table of the Gateway whose
# pod served it (found from the pod's gateway-name label), with that
# Gateway as k8s.gateway.name. Counts come from nginx's log and, for
# haproxy (whose stdout log drops lines under load here, see
# test_haproxy_counts.sh), from the client's own count of responses.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/k8s_api.sh"
. "$(dirname "$0")/proxy_pod.sh"
need_root
need_bin milometer gen_nginx
command -v bpftool >/dev/null || fail "bpftool is missing (deploy/install-deps.sh installs it)"
use_manifests base
start_backends
start_nginx
HA_PORT=28090
PROXY_PORT=$HA_PORT start_haproxy 1

k8s_start_api
k8s_base_objects
cat <<'EOF2' | kc apply -f - >/dev/null || fail "kubectl apply of gw2"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw2, namespace: infra}
spec:
  gatewayClassName: milometer-test
  listeners: [{name: http, protocol: HTTP, port: 80, allowedRoutes: {namespaces: {from: All}}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: edge-api, namespace: apps}
spec:
  parentRefs: [{name: gw2, namespace: infra}]
  hostnames: ["api.example.com"]
  rules:
  - matches: [{path: {type: PathPrefix, value: /v1}}]
    backendRefs: [{name: py, port: 18181}]
EOF2

HA_PID=$(pgrep -f "^$T/mm-it-haproxy")
[ -n "$HA_PID" ] || fail "no haproxy process"
proxy_pod gw-proxy gw $NGINX_PID $(nginx_workers)
proxy_pod gw2-proxy gw2 $HA_PID

AGENT_SOURCE=(--kubeconfig "$T/kubeconfig")
AGENT_TARGET=(--node-name "$NODE") # no --proxy-*: the pods say
start_agent
found() { grep -q '2 proxy pods on this node, 2 containers traced' "$T/agent.out"; }
wait_for 20 found || fail "the agent did not find both proxy pods: $(tail -5 "$T/agent.out")"
expect_metric 2 "gateway slots" milometer_proxy_pods state=gateway_slots

hey -n 300 -c 4 -host api.example.com "http://127.0.0.1:$PROXY_PORT/v1/status" >/dev/null
hey -n 200 -c 4 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/cart/1" >/dev/null
hey -n 250 -c 4 -host api.example.com "http://127.0.0.1:$HA_PORT/v1/x" >"$T/hey-api.txt"
hey -n 150 -c 4 -host www.shop.test "http://127.0.0.1:$HA_PORT/cart/1" >"$T/hey-web.txt"

# ground truth: nginx's log, the client's count of haproxy's responses
wait_log_lines "$NGINX_LOG" 500 || fail "nginx logged $(log_lines "$NGINX_LOG") of 500"
n_api=$(grep -c 'api\.example\.com' "$NGINX_LOG")
n_web=$(grep -c 'www\.shop\.test' "$NGINX_LOG")
h_api=$(awk '$1 == "[200]" { print $2 }' "$T/hey-api.txt")
h_web=$(awk '$1 == "[200]" { print $2 }' "$T/hey-web.txt")
log "nginx: $n_api api, $n_web web; haproxy: $h_api api, $h_web web"
[ $((n_api + n_web)) = 500 ] || fail "nginx's log does not add up: $n_api+$n_web"
[ "${h_api:-0}" -gt 0 ] && [ "${h_web:-0}" -gt 0 ] ||
	fail "haproxy did not answer 200: $(tail -3 "$T/hey-api.txt" "$T/hey-web.txt")"

D=envoy_http_downstream_rq_total
expect_metric "$n_api" "gw's api route" $D k8s_httproute_name=api k8s_gateway_name=gw
expect_metric "$n_web" "gw's web route" $D k8s_httproute_name=web k8s_gateway_name=gw
expect_metric "$h_api" "gw2's edge-api route" $D k8s_httproute_name=edge-api k8s_gateway_name=gw2
expect_metric "$h_web" "www.shop.test on gw2 (no route there)" $D k8s_httproute_name=unmatched k8s_gateway_name=gw2
# and nothing crossed over
expect_metric "$n_api" "api route on any Gateway" $D k8s_httproute_name=api
expect_metric "$h_web" "unmatched on any Gateway" $D k8s_httproute_name=unmatched
expect_metric "$((n_api + n_web + h_api + h_web))" "every request" $D

# control-plane series are the controller's (one producer for the cluster):
# an agent whose source is the API leaves ResourceFields policies out
kc apply -f "$ROOT/deploy/examples/contract/extra-httproute-created-metricdefinition.yaml" \
	-f "$ROOT/deploy/examples/contract/extra-httproute-created-metricpolicy.yaml" >/dev/null ||
	fail "kubectl apply of a ResourceFields policy"
policy_loaded() { ctl policies | grep -q 'gateway-httproute-created-policy'; }
wait_for 20 policy_loaded || fail "the agent did not load the policy: $(ctl policies)"
sleep 2 # two collection ticks
metrics | grep -q '^gateway_networking_k8s_io_httproute_created' &&
	fail "a node agent produced ResourceFields series: $(metrics | grep httproute_created | head -3)"
grep -q 'ResourceFields policies are left to `milometer controller`' "$T/agent.out" ||
	fail "the agent did not say who produces ResourceFields series"

# a pod that goes away takes its container cgroup out of the target map
# (restarts and rollouts would otherwise fill its 256 entries)
# (map names are cut to 15 bytes in the kernel)
[ "$(map_entries mm_target_cgroups)" = 2 ] || fail "mm_target_cgroups has $(map_entries mm_target_cgroups) entries, want 2: $(agent_bpftool map dump pinned "$PIN_DIR/mm_target_cgroups" 2>&1 | head -20)"
kc -n infra delete pod gw2-proxy >/dev/null || fail "kubectl delete pod"
expect_metric 1 "containers removed after the pod was deleted" milometer_proxy_pods state=containers_removed
expect_metric 1 "containers traced after the pod was deleted" milometer_proxy_pods state=containers_traced
[ "$(map_entries mm_target_cgroups)" = 1 ] || fail "mm_target_cgroups has $(map_entries mm_target_cgroups) entries after the delete, want 1"
