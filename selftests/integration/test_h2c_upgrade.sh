#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# h2c by Upgrade (gate HTTP2; RFC 7540 3.2): curl --http2 on
# http:// sends its first request as HTTP/1.1 with "Upgrade: h2c"; Caddy
# (servers protocols h1 h2c) answers 101 and the connection is HTTP/2 from
# there, the first request being stream 1. The agent parses that request as
# HTTP/1, switches the connection to the HTTP/2 decoder at the 101 (the
# request becomes stream 1, not an HTTP/1 exchange), and follows its later
# streams. Counts against Caddy's access log, both legs; also h2c with
# prior knowledge and plain HTTP/1.1 on the same listener.
PROXY_EXE=mm-it-caddy
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer
command -v caddy >/dev/null || fail "caddy is missing (deploy/install-deps.sh installs it)"
use_manifests base
start_backends
H2C_PORT=28446
port_free $H2C_PORT
C=$T/caddy
mkdir -p "$C"
cat >"$C/Caddyfile" <<CADDY
{
	admin off
	servers {
		protocols h1 h2c
	}
}
http://www.shop.test:$H2C_PORT {
	reverse_proxy 127.0.0.1:$PY_PORT
	log {
		output file $C/access.log
		format json
	}
}
CADDY
cp /usr/bin/caddy "$T/mm-it-caddy"
start_agent --feature-gates=HTTP2=true
XDG_DATA_HOME=$C XDG_CONFIG_HOME=$C HOME=$C \
	start_bg caddy "$T/mm-it-caddy" run --config "$C/Caddyfile" --adapter caddyfile
wait_for 20 listening $H2C_PORT || fail "caddy did not start: $(tail -n 5 "$T/caddy.out")"

R="--resolve www.shop.test:$H2C_PORT:127.0.0.1"
U=http://www.shop.test:$H2C_PORT/cart
req() { # CURL-ARGS... : "version code" per URL
	# shellcheck disable=SC2086
	curl -sS $R -o /dev/null -w '%{http_version} %{http_code}\n' "$@"
}
for i in $(seq 10); do
	got=$(req --http2 -H 'Connection: Upgrade, HTTP2-Settings' "$U/up$i")
	[ "$got" = "2 200" ] || fail "upgraded request $i: $got"
done
# one connection: the first request upgraded, the next four are streams
[ "$(req --http2 "$U/a" "$U/b" "$U/c" "$U/d" "$U/e" | grep -c '^2 200$')" = 5 ] ||
	fail "requests after an upgrade on one connection"
for i in $(seq 5); do
	got=$(req --http2-prior-knowledge "$U/pk$i")
	[ "$got" = "2 200" ] || fail "prior-knowledge request $i: $got"
	got=$(req --http1.1 "$U/h1$i")
	[ "$got" = "1.1 200" ] || fail "HTTP/1.1 request $i: $got"
done
wait_for 10 log_at_least "$C/access.log" 25 || fail "caddy logged $(log_lines "$C/access.log")"
DOWN=envoy_http_downstream_rq_total
UP=envoy_cluster_upstream_rq_total
expect_metric 25 "downstream requests caddy logged" $DOWN k8s_httproute_name=web
expect_metric 25 "upstream requests caddy logged" $UP k8s_httproute_name=web
expect_metric 20 "HTTP/2 streams (15 after an upgrade, 5 prior knowledge)" milometer_http2_streams_total result=exchange
[ "$(metric $DOWN http_response_status_code=101)" = 0 ] || fail "101s counted as exchanges"
stop_agent
log "h2c upgrade ok"
