#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# HEAD: responses carry Content-Length (or chunked) but no body; the agent
# must end the exchange at the head, not wait for body bytes that never come
# (keep-alive, so a wrong wait would swallow the next request).
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
start_agent
A=127.0.0.1:$PROXY_PORT
set -f # URLs with "?" in unquoted lists
for args in "--host api.example.com --path /v1/x?size=5000" \
	"--host api.example.com --path /v1/status" \
	"--host canary.example.com --path /c?chunked=1 -H X-Canary:1" \
	"--host nohost.test --path /"; do
	out=$(client send "$A" --method HEAD --count 25 $args)
	case "$out" in "responses 25 "*) ;; *) fail "HEAD $args: $out" ;; esac
	# and GETs on the same kind of connection after HEADs
	client send "$A" --count 5 $args >/dev/null
done
hey -n 300 -c 3 -m HEAD -host www.shop.test "http://127.0.0.1:$PROXY_PORT/" >/dev/null
compare_log --expect-total 420
