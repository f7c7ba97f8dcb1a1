#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# gRPC through the gateway (gate HTTP2): a Python grpcio client
# calls over h2c through nginx (grpc_pass) to a Python grpcio server, asking
# for status OK, NOT_FOUND (5) and UNAVAILABLE (14). The streams count per
# route on both legs (the upstream one is h2c too, written by nginx), and
# grpc-status (trailers, or Trailers-Only for an abort) becomes the
# rpc.grpc.status_code attribute, so policies and the source metrics can
# split on it. An upstream leg whose :authority is the backend's (Host not
# forwarded) is unknown, never unmatched. Ground truth: the client's own counts per code, and
# nginx's access log per route.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
$PY -c 'import grpc' 2>/dev/null || fail "python3-grpcio is missing (deploy/install-deps.sh installs it)"
use_manifests base
start_backends
GRPC_PORT=28190
NGINX_H2C_PORT=28444
port_free $GRPC_PORT $NGINX_H2C_PORT
start_bg grpc "$PY" "$IT_DIR/grpc_echo.py" serve $GRPC_PORT
wait_for 10 listening $GRPC_PORT || fail "the gRPC server did not start: $(cat "$T/grpc.out")"
# nginx serves grpc.example.com itself (gen_nginx has no gRPC backends); a
# second server forwards without the Host: its upstream legs are unknown
GRPC_BARE_PORT=28445
port_free $GRPC_BARE_PORT
cat >"$T/nginx-extra.conf" <<CONF
    server {
	listen 127.0.0.1:$NGINX_H2C_PORT http2;
	server_name grpc.example.com;
	set \$route "apps/grpc rule 0";
	location /mm.Echo/ {
		grpc_pass grpc://127.0.0.1:$GRPC_PORT;
		# the upstream h2c request is attributed by its own :authority
		grpc_set_header Host \$host;
	}
    }
    server {
	listen 127.0.0.1:$GRPC_BARE_PORT http2;
	server_name grpc.example.com;
	set \$route "apps/grpc rule 0";
	location /mm.Echo/ { grpc_pass grpc://127.0.0.1:$GRPC_PORT; }
    }
CONF
start_nginx
# the route as the agent knows it (after gen_nginx, which would serve it
# over HTTP/1)
cat >"$T/manifests/grpc.yaml" <<'YAML'
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: grpc, namespace: apps}
spec:
  parentRefs: [{name: gw, namespace: infra}]
  hostnames: ["grpc.example.com"]
  rules:
  - matches: [{path: {type: PathPrefix, value: /mm.Echo}}]
    backendRefs: [{name: py, port: 18181}]
YAML
start_agent --feature-gates=HTTP2=true

call() { "$PY" "$IT_DIR/grpc_echo.py" call "127.0.0.1:$NGINX_H2C_PORT" grpc.example.com "$@"; }
[ "$(call 0 30)" = "calls 30 codes {0: 30}" ] || fail "gRPC OK calls: $(call 0 1)"
[ "$(call 5 20)" = "calls 20 codes {5: 20}" ] || fail "gRPC NOT_FOUND calls: $(call 5 1)"
[ "$(call 14 10)" = "calls 10 codes {14: 10}" ] || fail "gRPC UNAVAILABLE calls: $(call 14 1)"
wait_log_lines "$NGINX_LOG" 60 || fail "nginx logged $(log_lines "$NGINX_LOG")"
[ "$(mmlogcount apps/grpc)" = 60 ] || fail "nginx routed $(mmlogcount apps/grpc) to apps/grpc"
DOWN=envoy_http_downstream_rq_total
expect_metric 60 "gRPC calls on the grpc route" $DOWN k8s_httproute_name=grpc
expect_metric 30 "grpc-status 0" $DOWN k8s_httproute_name=grpc rpc_grpc_status_code=0
expect_metric 20 "grpc-status 5" $DOWN k8s_httproute_name=grpc rpc_grpc_status_code=5
expect_metric 10 "grpc-status 14" $DOWN k8s_httproute_name=grpc rpc_grpc_status_code=14
UP=envoy_cluster_upstream_rq_total
expect_metric 60 "gRPC calls upstream (h2c to the backend)" $UP k8s_httproute_name=grpc
expect_metric 20 "grpc-status 5 upstream" $UP k8s_httproute_name=grpc rpc_grpc_status_code=5
# without the Host forwarded: downstream on the route, upstream unknown
out=$("$PY" "$IT_DIR/grpc_echo.py" call "127.0.0.1:$GRPC_BARE_PORT" grpc.example.com 0 7)
[ "$out" = "calls 7 codes {0: 7}" ] || fail "gRPC calls (no Host forwarded): $out"
expect_metric 67 "all gRPC calls downstream" $DOWN k8s_httproute_name=grpc
expect_metric 7 "upstream legs whose :authority is the backend's" $UP k8s_httproute_name=unknown
[ "$(metric $UP k8s_httproute_name=unmatched)" = 0 ] || fail "upstream legs unmatched"
[ "$(metric $DOWN k8s_httproute_name=grpc http_response_status_code=200)" = 67 ] ||
	fail "gRPC answers carry :status 200: $(metric $DOWN k8s_httproute_name=grpc http_response_status_code=200)"
[ "$(mmlogcount apps/grpc)" = 67 ] || fail "nginx routed $(mmlogcount apps/grpc) to apps/grpc"
stop_agent
log "gRPC capture ok"
