#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The listener of a socket from the Gateway's Service: listeners on 80 and
# 443, and the proxy's Service (labelled with its Gateway as Envoy Gateway
# labels it) mapping them to the ports nginx accepts on, as its port ->
# targetPort maps 80 to 10080. No --listener-port: the agent reads the
# Service from the manifests (the API gives it the same objects). Counts
# equal nginx's log on both legs.
. "$(dirname "$0")/lib.sh"
. "$IT_DIR/listeners.sh"
need_root
need_bin milometer
use_manifests listeners
sed -i -e "s/port: $HTTP_SOCK\$/port: 80/" -e "s/port: $WEB_SOCK\$/port: 443/" \
	-e "s/port: $WEB_SOCK}/port: 443}/" "$T/manifests/shop.yaml"
cat >"$T/manifests/service.yaml" <<EOF2
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
start_backends
start_agent
grep -q "socket port $HTTP_SOCK serves listener port 80" "$T/agent.out" &&
	grep -q "socket port $WEB_SOCK serves listener port 443" "$T/agent.out" ||
	fail "the agent did not map the listener ports: $(tail -5 "$T/agent.out")"
listeners_nginx
listeners_traffic
