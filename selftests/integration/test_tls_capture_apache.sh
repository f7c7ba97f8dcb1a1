#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# TLS capture (gates TLSCapture and HTTP2) with a third proxy:
# Debian's apache2 (mpm_event worker threads, mod_ssl's own BIO reading the
# socket inside SSL_read, mod_http2 for ALPN h2, mod_proxy to the backend).
# HTTP/1.1 and HTTP/2 clients over TLS; every request apache logged is
# counted downstream and upstream; then a graceful restart replaces the
# worker process, and the new one is attached (on its fork event) and
# counts.
PROXY_EXE=mm-it-apache2
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer
[ -x /usr/sbin/apache2 ] || fail "apache2 is missing (deploy/install-deps.sh installs it)"
use_manifests base
start_backends
TLS_PORT=28443
port_free $TLS_PORT
make_cert
A=$T/apache
mkdir -p "$A"
M=/usr/lib/apache2/modules
cat >"$A/httpd.conf" <<CONF
ServerRoot $A
ServerName localhost
PidFile $A/httpd.pid
Listen 127.0.0.1:$TLS_PORT
LoadModule mpm_event_module $M/mod_mpm_event.so
LoadModule authz_core_module $M/mod_authz_core.so
LoadModule ssl_module $M/mod_ssl.so
LoadModule http2_module $M/mod_http2.so
LoadModule proxy_module $M/mod_proxy.so
LoadModule proxy_http_module $M/mod_proxy_http.so
User www-data
Group www-data
ErrorLog $A/error.log
LogFormat "%{Host}i	%U	%>s	%H" mm
CustomLog $A/access.log mm
Protocols h2 http/1.1
KeepAliveTimeout 30
# One worker process, forked only when the test says: mpm_event forks one
# more when idle threads drop below MinSpareThreads at its once-a-second
# check (a busy connection on a slow run), and a connection whose handshake
# ran in a worker before the agent attached its uprobes loses its first
# request (mod_ssl read it with the handshake: the SSL_read serving it
# makes no syscall to bind by; counted as tls_no_socket). A new worker is
# tested below, once attached.
StartServers 1
ServerLimit 1
ThreadsPerChild 25
MaxRequestWorkers 25
MinSpareThreads 1
MaxSpareThreads 25
<VirtualHost 127.0.0.1:$TLS_PORT>
	SSLEngine on
	SSLCertificateFile $T/tls.crt
	SSLCertificateKeyFile $T/tls.key
	ProxyPreserveHost On
	ProxyPass / http://127.0.0.1:$PY_PORT/
</VirtualHost>
CONF
cp /usr/sbin/apache2 "$T/mm-it-apache2"
"$T/mm-it-apache2" -t -f "$A/httpd.conf" 2>"$A/check.err" || fail "apache2 config: $(cat "$A/check.err")"
start_agent --feature-gates=TLSCapture=true,HTTP2=true
start_bg apache2 "$T/mm-it-apache2" -f "$A/httpd.conf" -D FOREGROUND
wait_for 10 listening $TLS_PORT || fail "apache2 did not start: $(tail -5 "$A/error.log")"
# every apache process (parent and children) has its uprobes
attached() {
	[ "$(metric milometer_tls_uprobes kind=processes)" -ge "$(pgrep -cx mm-it-apache2)" ]
}
wait_for 10 attached || fail "apache2's processes not all attached: $(metric milometer_tls_uprobes kind=processes) of $(pgrep -cx mm-it-apache2)"

R="--resolve www.shop.test:$TLS_PORT:127.0.0.1"
U=https://www.shop.test:$TLS_PORT/cart
for v in --http1.1 --http2; do
	for i in $(seq 10); do
		# shellcheck disable=SC2086
		got=$(curl -sS -k $v $R -o /dev/null -w '%{http_version} %{http_code}' "$U/c$i")
		case "$v $got" in "--http1.1 1.1 200" | "--http2 2 200") ;; *) fail "$v request $i: $got" ;; esac
	done
	urls=()
	for i in $(seq 10); do urls+=("$U/k$i"); done
	# shellcheck disable=SC2086
	[ "$(curl -sS -k $v $R -o /dev/null -w '%{http_code}\n' "${urls[@]}" | grep -c 200)" = 10 ] ||
		fail "$v keep-alive requests"
done
wait_for 10 log_at_least "$A/access.log" 40 || fail "apache logged $(log_lines "$A/access.log")"
[ "$(grep -c 'HTTP/2' "$A/access.log")" = 20 ] || fail "apache served $(grep -c 'HTTP/2' "$A/access.log") over h2"
DOWN=envoy_http_downstream_rq_total
UP=envoy_cluster_upstream_rq_total
expect_metric 40 "downstream requests apache logged" $DOWN k8s_httproute_name=web
expect_metric 40 "upstream requests apache logged" $UP k8s_httproute_name=web
[ "$(metric $DOWN)" = 40 ] || fail "downstream in all: $(metric $DOWN)"
expect_metric 20 "HTTP/2 streams" milometer_http2_streams_total result=exchange

# graceful restart: the worker is replaced by a new process (a fork of the
# parent; ServerLimit 1: forked once the old one is gone), attached by the
# agent on its fork event
old=$(pgrep -x mm-it-apache2 | grep -vx "$(cat "$A/httpd.pid")" | sort)
fork_scans() { ctl --json tls | $PY -c 'import json, sys; print(json.load(sys.stdin)["fork_scans"])'; }
fs0=$(fork_scans)
kill -USR1 "$(cat "$A/httpd.pid")"
# the parent and one new worker, each with its uprobes (ctl tls)
replaced() {
	local now pid
	now=$(pgrep -x mm-it-apache2 | sort)
	[ -z "$(comm -12 <(echo "$old") <(echo "$now"))" ] && [ "$(echo "$now" | wc -l)" = 2 ] || return 1
	ctl tls >"$T/ctl-tls.txt" 2>&1 || return 1
	for pid in $now; do
		grep -Eq "^pid $pid uprobes=[1-9]" "$T/ctl-tls.txt" || return 1
	done
}
wait_for 20 replaced || fail "apache2's worker not replaced and attached: $(pgrep -x mm-it-apache2 | tr '\n' ' '), ctl tls: $(cat "$T/ctl-tls.txt")"
[ "$(fork_scans)" -gt "$fs0" ] || fail "no scan on a fork event: $(ctl tls)"
for i in $(seq 10); do
	# shellcheck disable=SC2086
	got=$(curl -sS -k --http1.1 $R -o /dev/null -w '%{http_code}' "$U/g$i")
	[ "$got" = 200 ] || fail "request $i after the graceful restart: $got"
done
wait_for 10 log_at_least "$A/access.log" 50 || fail "apache logged $(log_lines "$A/access.log")"
expect_metric 50 "requests apache logged, with a new worker" $DOWN k8s_httproute_name=web
expect_metric 50 "upstream requests apache logged, with a new worker" $UP k8s_httproute_name=web
[ "$(metric milometer_bpf_tls_no_socket_total)" = 0 ] ||
	fail "SSL_* calls with no socket: $(metric milometer_bpf_tls_no_socket_total)"
stop_agent
log "apache2 TLS capture ok"
