#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Requests no route matches (unknown host; known host, no path match; the
# apex of a wildcard) are counted as route "unmatched", never as a route.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
start_agent
for c in "nohost.test /" "api.example.com /v2/x" "www.shop.test /nope" \
	"example.com /" "api.example.com /v1x"; do
	set -- $c
	[ "$(explain "http://$1$2")" = unmatched ] || fail "explain $1$2 is not unmatched"
	hey -n 300 -c 4 -host "$1" "http://127.0.0.1:$PROXY_PORT$2" >"$T/hey.txt"
	grep -q '\[404\].*300 responses' "$T/hey.txt" || fail "$1$2: $(cat "$T/hey.txt")"
done
# and some that match, so unmatched is not all there is
hey -n 300 -c 4 -host api.example.com "http://127.0.0.1:$PROXY_PORT/v1" >/dev/null
[ "$(mmlogcount unmatched)" = 1500 ] || fail "nginx logged $(mmlogcount unmatched) unmatched, not 1500"
compare_log --expect-total 1800
