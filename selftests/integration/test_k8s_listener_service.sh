#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_listener_service.sh from the Kubernetes API: the Gateway (listeners
# on 80 and 443), its routes and its proxy's Service (Envoy Gateway's
# labels, port -> targetPort the ports nginx accepts on) put into the test
# API server with kubectl; the agent watches the Service by label and maps
# each listener to its socket. Counts equal nginx's log on both legs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/k8s_api.sh"
. "$IT_DIR/listeners.sh"
need_root
need_bin milometer
use_manifests listeners
sed -i -e "s/port: $HTTP_SOCK\$/port: 80/" -e "s/port: $WEB_SOCK\$/port: 443/" \
	-e "s/port: $WEB_SOCK}/port: 443}/" "$T/manifests/shop.yaml"
start_backends
k8s_start_api
printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\n' t envoy-gateway-system |
	kc apply -f - >/dev/null || fail "kubectl apply namespaces"
kc apply -f "$T/manifests/shop.yaml" >/dev/null || fail "kubectl apply shop.yaml"
cat <<EOF2 | kc apply -f - >/dev/null || fail "kubectl apply of the Service"
apiVersion: v1
kind: Service
metadata:
  name: envoy-t-shop-5f1e2d
  namespace: envoy-gateway-system
  labels:
    gateway.envoyproxy.io/owning-gateway-name: shop
    gateway.envoyproxy.io/owning-gateway-namespace: t
spec:
  ports:
  - {name: http-80, port: 80, targetPort: $HTTP_SOCK}
  - {name: https-443, port: 443, targetPort: $WEB_SOCK}
EOF2
AGENT_SOURCE=(--kubeconfig "$T/kubeconfig")
start_agent
grep -q 'k8s: watching' "$T/agent.out" || fail "the agent did not use the API"
wait_for 20 grep -q "socket port $WEB_SOCK serves listener port 443" "$T/agent.out" &&
	grep -q "socket port $HTTP_SOCK serves listener port 80" "$T/agent.out" ||
	fail "the agent did not map the listener ports: $(tail -5 "$T/agent.out")"
listeners_nginx
listeners_traffic
