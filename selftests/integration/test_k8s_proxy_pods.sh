#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# In a cluster the agent runs with no --proxy-* flag: the proxy is the pod
# of this node that a Gateway runs (label gateway.networking.k8s.io/
# gateway-name), found through the API and its container's cgroup v2 id.
# Here the gateway nginx is moved into a real cgroup shaped as the systemd
# driver + containerd lay a Burstable pod out, the Pod object (with that
# uid, QoS class and container id) lives in the test API server, and the
# counts must equal nginx's access log (the backends, in no pod, stay
# untraced: their I/O would show up as extra exchanges).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/k8s_api.sh"
. "$(dirname "$0")/proxy_pod.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx

k8s_start_api
k8s_base_objects

proxy_pod gw-proxy gw $NGINX_PID $(nginx_workers)

AGENT_SOURCE=(--kubeconfig "$T/kubeconfig")
AGENT_TARGET=(--node-name "$NODE") # no --proxy-*: the pods say
start_agent
grep -q 'k8s: watching' "$T/agent.out" || fail "the agent did not use the API"
found() { grep -q '1 proxy pods on this node, 1 containers traced' "$T/agent.out"; }
wait_for 20 found || fail "the agent did not find the proxy pod's container: $(tail -5 "$T/agent.out")"

hey -n 300 -c 4 -host api.example.com "http://127.0.0.1:$PROXY_PORT/v1/status" >/dev/null
hey -n 200 -c 4 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/cart/1" >/dev/null
compare_log --expect-total 500
