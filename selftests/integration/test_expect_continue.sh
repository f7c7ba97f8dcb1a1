#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# 1xx: POST with Expect: 100-continue; the client waits for nginx's
# "100 Continue" before it sends the body. One exchange per request with the
# final status, never an extra one for the interim response.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
start_agent
A=127.0.0.1:$PROXY_PORT
out=$(client send "$A" --host api.example.com --path /v1/orders --method POST \
	--body 'order=1' --expect100 --count 20)
log "$out"
case "$out" in "responses 20 interim 20 "*) ;; *) fail "100-continue: $out" ;; esac
out=$(client send "$A" --host api.example.com --path '/v1/orders?status=500' \
	--method POST --body 'order=2' --expect100 --count 10)
case "$out" in "responses 10 interim 10 "*) ;; *) fail "100-continue: $out" ;; esac
for i in $(seq 10); do
	curl -sS -o /dev/null -H 'Host: www.shop.test' -H 'Expect: 100-continue' \
		--data-binary "@$IT_DIR/wrk_mix.lua" "http://$A/cart/add"
done
compare_log --expect-total 40
