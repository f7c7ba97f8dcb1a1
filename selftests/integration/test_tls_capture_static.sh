#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# TLS capture (gate TLSCapture) of a server whose OpenSSL is
# linked into its own executable (libssl.a; the case of Envoy built with
# symbols): discovery finds SSL_* in the executable's .symtab, the uprobes
# go on the executable, and its TLS requests count by route as its own log
# says (one line per request). The server answers itself: no upstream leg.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer
[ -f /usr/lib/x86_64-linux-gnu/libssl.a ] || fail "libssl.a is missing (libssl-dev)"
use_manifests base
SRV=$T/mm-static-srv
cc -O2 -o "$SRV" "$IT_DIR/static_tls/server.c" /usr/lib/x86_64-linux-gnu/libssl.a \
	/usr/lib/x86_64-linux-gnu/libcrypto.a -lpthread 2>"$T/cc.err" ||
	fail "cannot build the static TLS server: $(tail -3 "$T/cc.err")"
! ldd "$SRV" | grep -q libssl || fail "the static server links libssl dynamically"
make_cert
port_free $PROXY_PORT
start_bg static-srv sh -c "exec '$SRV' $PROXY_PORT '$T/tls.crt' '$T/tls.key' >'$T/srv.log'"
wait_for 10 listening $PROXY_PORT || fail "the static server did not start"
AGENT_TARGET=(--proxy-exe mm-static-srv)
start_agent --feature-gates=TLSCapture=true
wait_for 20 grep -q "TLS capture: uprobes on .*mm-static-srv (static)" "$T/agent.out" ||
	fail "no uprobes on the static server: $(grep -i tls "$T/agent.out")"
get() { # HOST PATH...: one connection, several requests
	local h=$1
	shift
	curl -sS -k -o /dev/null -w '%{http_code}\n' \
		--resolve "$h:$PROXY_PORT:127.0.0.1" "${@/#/https://$h:$PROXY_PORT}"
}
for i in $(seq 10); do
	[ "$(get api.example.com /v1/status)" = 200 ] || fail "request $i"
done
[ "$(get www.shop.test /cart/1 /cart/2 /cart/3 /cart/4 /cart/5 | grep -c 200)" = 5 ] ||
	fail "keep-alive requests"
wait_for 10 log_at_least "$T/srv.log" 15 || fail "the server logged $(log_lines "$T/srv.log")"
[ "$(grep -c '^api.example.com' "$T/srv.log")" = 10 ] || fail "server log: $(cat "$T/srv.log")"
DOWN=envoy_http_downstream_rq_total
expect_metric 10 "requests on apps/api rule 0 (the server's log)" $DOWN k8s_httproute_name=api
expect_metric 5 "requests on shop/web" $DOWN k8s_httproute_name=web
[ "$(metric $DOWN)" = 15 ] || fail "requests counted: $(metric $DOWN), the server logged 15"
stop_agent
log "static TLS capture ok"
