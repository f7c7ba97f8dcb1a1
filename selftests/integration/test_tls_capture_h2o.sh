#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The hard case of TLS capture: h2o (Debian's 2.2.5) gives
# OpenSSL its own BIO: it reads its sockets itself, outside SSL_read, and
# hands OpenSSL the bytes. Measured here: a socket is still named for each
# connection (a write of the handshake or of a response happens inside an
# SSL_* call), so its HTTP/1.1 requests are counted; its HTTP/2 streams are
# not (the connection is never recognised as HTTP/2). What must hold is
# that nothing is attributed to a guessed connection: two routes served
# concurrently on separate connections, no route counted more than h2o
# served it, and every plaintext upstream leg counted by its own head.
PROXY_EXE=mm-it-h2o
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer
command -v h2o >/dev/null || fail "h2o is missing (deploy/install-deps.sh installs it)"
use_manifests base
start_backends
TLS_PORT=28443
port_free $TLS_PORT
make_cert
H=$T/h2o
mkdir -p "$H"
cat >"$H/h2o.conf" <<CONF
listen:
  host: 127.0.0.1
  port: $TLS_PORT
  ssl:
    certificate-file: $T/tls.crt
    key-file: $T/tls.key
hosts:
  "www.shop.test:$TLS_PORT":
    paths:
      /:
        proxy.reverse.url: http://127.0.0.1:$PY_PORT/
        proxy.preserve-host: ON
  "api.example.com:$TLS_PORT":
    paths:
      /:
        proxy.reverse.url: http://127.0.0.1:$PY_PORT/
        proxy.preserve-host: ON
access-log: $H/access.log
error-log: $H/error.log
pid-file: $H/h2o.pid
user: root
CONF
cp "$(command -v h2o)" "$T/mm-it-h2o"
start_agent --feature-gates=TLSCapture=true,HTTP2=true
start_bg h2o "$T/mm-it-h2o" -c "$H/h2o.conf"
wait_for 10 listening $TLS_PORT || fail "h2o did not start: $(tail -n 5 "$T/h2o.out" "$H/error.log")"
# h2o runs its server in a child process: stopped with the test too
BG_PIDS+=($(pgrep -x mm-it-h2o))
wait_for 10 grep -q 'TLS capture: uprobes on .*libssl' "$T/agent.out" ||
	fail "no uprobes on h2o's libssl: $(grep -i tls "$T/agent.out")"
R="--resolve www.shop.test:$TLS_PORT:127.0.0.1 --resolve api.example.com:$TLS_PORT:127.0.0.1"
one() { # VERSION URL
	# shellcheck disable=SC2086
	curl -sS -k "$1" $R -o /dev/null -w '%{http_code}\n' "$2"
}
export -f one
export R
# two routes at once, on separate connections, HTTP/1.1 then HTTP/2
for v in --http1.1 --http2; do
	for i in $(seq 20); do
		echo "$v https://www.shop.test:$TLS_PORT/cart/c$i"
		echo "$v https://api.example.com:$TLS_PORT/v1/x$i"
	done | xargs -P 4 -L 1 bash -c 'one "$0" "$1"' >"$T/codes$v"
	[ "$(grep -c '^200$' "$T/codes$v")" = 40 ] || fail "$v requests: $(sort "$T/codes$v" | uniq -c)"
done
wait_for 10 log_at_least "$H/access.log" 80 || fail "h2o logged $(log_lines "$H/access.log")"
DOWN=envoy_http_downstream_rq_total
UP=envoy_cluster_upstream_rq_total
expect_metric 80 "upstream legs (plaintext, attributed by their own head)" $UP
expect_metric 40 "upstream legs of shop/web" $UP k8s_httproute_name=web
web=$(metric $DOWN k8s_httproute_name=web)
api=$(metric $DOWN k8s_httproute_name=api)
all=$(metric $DOWN)
log "h2o: downstream shop/web $web, apps/api $api (of 40 each), all $all; tls_io $(metric milometer_bpf_tls_io_total), tls_no_socket $(metric milometer_bpf_tls_no_socket_total), h2 connections $(metric milometer_bpf_h2_connections_total)"
[ "$web" -le 40 ] && [ "$api" -le 40 ] || fail "a route counted more than h2o served: web $web, api $api"
[ "$all" = $((web + api)) ] || fail "requests on other routes: $all in all"
stop_agent
for p in $(pgrep -x mm-it-h2o); do stop_pid "$p"; done
no_h2o() { ! pgrep -x mm-it-h2o >/dev/null; }
wait_for 10 no_h2o || fail "h2o did not stop"
log "h2o ok: nothing attributed to a guessed connection"
