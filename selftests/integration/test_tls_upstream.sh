#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# TLS on the client's leg, plaintext to the backends (the usual
# gateway): the agent cannot read the TLS leg (no SSL uprobes yet), so the
# upstream request must be attributed by its own head (nginx forwards Host
# and path), never by the last plaintext request the same worker parsed.
# Plaintext and TLS requests alternate so each worker's last parsed request
# is a plaintext one to another route. Ground truth: the access log.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
command -v openssl >/dev/null || fail "openssl is missing (deploy/install-deps.sh installs it)"
use_manifests base
start_backends
NGINX_TLS_PORT=28443
port_free $NGINX_TLS_PORT
make_cert
start_nginx
wait_for 10 listening $NGINX_TLS_PORT || fail "nginx did not listen with TLS"
start_agent
N=40
for i in $(seq $N); do
	[ "$(px api.example.com /v1/status)" = 200 ] || fail "plaintext request $i"
	code=$(curl -sS -k -o /dev/null -w '%{http_code}' \
		--resolve "www.shop.test:$NGINX_TLS_PORT:127.0.0.1" \
		"https://www.shop.test:$NGINX_TLS_PORT/cart/t$i")
	[ "$code" = 200 ] || fail "TLS request $i: $code"
done
wait_log_lines "$NGINX_LOG" $((2 * N)) || fail "nginx logged $(log_lines "$NGINX_LOG")"
[ "$(mmlogcount shop/web)" = $N ] && [ "$(mmlogcount apps/api)" = $N ] ||
	fail "nginx routed $(mmlogcount shop/web) to shop/web, $(mmlogcount apps/api) to apps/api"
UP=envoy_cluster_upstream_rq_total
DOWN=envoy_http_downstream_rq_total
expect_metric $N "upstream requests of the plaintext route" $UP k8s_httproute_name=api
expect_metric $N "upstream requests of the TLS route, by their own head" $UP k8s_httproute_name=web
expect_metric $((2 * N)) "upstream requests in all" $UP
expect_metric $N "downstream requests (the plaintext ones: TLS is not read)" $DOWN
[ "$(metric $UP k8s_httproute_name=unknown)" = 0 ] || fail "upstream requests left unknown"
