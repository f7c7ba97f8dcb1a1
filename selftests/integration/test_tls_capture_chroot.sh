#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# TLS capture of a proxy under another root than the agent's, as a gateway
# pod is: nginx runs chrooted into a root made here ($T/jail) from copies of
# its executable and libraries, its libssl and libcrypto at a path of their
# own (/opt/mm-tls, by LD_LIBRARY_PATH), other files (inodes) than the
# agent's. The agent runs in its own mount namespace (agent_ns.sh), so the
# kernel names nginx's libssl in /proc/PID/maps by neither root: the agent
# must still attach to the jail's copy, and no file of its own. Counts are
# exact against nginx's access log: curl (new connections) and wrk
# (keep-alive). MM_IT_TLS_LIBDIR=DIR: take libssl.so.3 and libcrypto.so.3
# from DIR instead (another build of OpenSSL 3, e.g. a .deb unpacked with
# dpkg -x), to check capture against that build.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
for t in openssl wrk chroot ldd; do
	command -v $t >/dev/null || fail "$t is missing (deploy/install-deps.sh installs it)"
done
use_manifests base
start_backends
NGINX_TLS_PORT=28443
port_free $NGINX_TLS_PORT $PROXY_PORT
make_cert

# The jail: nginx's shared objects at their paths, libssl/libcrypto apart.
J=$T/jail
LIBDIR=${MM_IT_TLS_LIBDIR:-}
mkdir -p "$J/opt/mm-tls" "$J/etc" "$J/var/lib/nginx" "$J/var/log/nginx" "$J/tmp"
for f in $(ldd /usr/sbin/nginx | grep -o '/[^ ]*'); do
	case "${f##*/}" in
	libssl.so.3 | libcrypto.so.3)
		cp -L "${LIBDIR:-$(dirname "$f")}/${f##*/}" "$J/opt/mm-tls/" ||
			fail "no ${f##*/} in ${LIBDIR:-$(dirname "$f")}"
		;;
	*)
		mkdir -p "$J$(dirname "$f")"
		cp -L "$f" "$J$f"
		;;
	esac
done
[ -f "$J/opt/mm-tls/libssl.so.3" ] || fail "nginx does not link libssl.so.3: $(ldd /usr/sbin/nginx)"
cp /usr/sbin/nginx "$J/mm-it-nginx"
grep -E '^(root|nobody):' /etc/passwd >"$J/etc/passwd"
grep -E '^(root|nogroup):' /etc/group >"$J/etc/group"
# nginx's paths (config, logs, certificate) are $T/... as the host names
# them: inside the jail $T leads back to the jail's root, where they are.
mkdir -p "$J/nginx" "$J$(dirname "$T")"
ln -s / "$J$T"
rmdir "$NGINX_DIR" 2>/dev/null || true
ln -s jail/nginx "$NGINX_DIR"
cp "$T/tls.crt" "$T/tls.key" "$J/"
nginx_config
LD_LIBRARY_PATH=/opt/mm-tls start_bg nginx chroot "$J" /mm-it-nginx \
	-p "$NGINX_DIR/" -e "$NGINX_DIR/error.log" -c "$NGINX_DIR/nginx.conf" -g 'daemon off;'
NGINX_PID=$LAST_PID
wait_for 10 listening $NGINX_TLS_PORT || fail "chrooted nginx did not listen: $(cat "$T/nginx.out")"
wait_for 10 nginx_workers_replaced "" || fail "no nginx workers"
for w in $(nginx_workers); do
	[ "$(readlink /proc/$w/root)" = "$J" ] || fail "worker $w is not in the jail: $(readlink /proc/$w/root)"
	grep -q " $J/opt/mm-tls/libssl.so.3\$" /proc/$w/maps ||
		fail "worker $w does not map the jail's libssl: $(grep libssl /proc/$w/maps)"
done

printf 'featureGates:\n  TLSCapture: true\n' >"$T/config.yaml"
start_agent --config "$T/config.yaml"
wait_for 10 grep -q 'TLS capture: uprobes on .*/opt/mm-tls/libssl.so.3' "$T/agent.out" ||
	fail "no uprobes on the jail's libssl: $(grep -i tls "$T/agent.out")"
log "$(grep -m1 'TLS capture: uprobes on' "$T/agent.out")"
ctl --json tls >"$T/tls.json" || fail "ctl tls failed"
$PY - "$T/tls.json" $(nginx_workers) <<'PY' || fail "ctl --json tls: $(cat "$T/tls.json")"
import json, sys
d = json.load(open(sys.argv[1]))
libs = d["libraries"]
# the jail's copy only: never the agent's own /usr/lib/.../libssl.so.3
assert libs and all("/opt/mm-tls/" in l["path"] and l["usable"] for l in libs), libs
up = {p["pid"]: p["uprobes"] for p in d["processes"]}
assert all(up.get(int(pid), 0) > 0 for pid in sys.argv[2:]), (up, sys.argv[2:])
PY

DOWN=envoy_http_downstream_rq_total
UP=envoy_cluster_upstream_rq_total
TLS_URL=https://www.shop.test:$NGINX_TLS_PORT
tls_get() {
	curl -sS -k -o /dev/null -w '%{http_code}\n' \
		--resolve "www.shop.test:$NGINX_TLS_PORT:127.0.0.1" "$@"
}
N=30
for i in $(seq $N); do
	[ "$(tls_get "$TLS_URL/cart/c$i")" = 200 ] || fail "TLS request $i"
done
urls=()
for i in $(seq 20); do urls+=("$TLS_URL/cart/k$i"); done
[ "$(tls_get "${urls[@]}" | grep -c '^200$')" = 20 ] || fail "keep-alive TLS requests"
wait_log_lines "$NGINX_LOG" $((N + 20)) || fail "nginx logged $(log_lines "$NGINX_LOG")"
expect_metric $((N + 20)) "TLS requests read downstream in the jail" $DOWN k8s_httproute_name=web
expect_metric $((N + 20)) "their upstream requests" $UP k8s_httproute_name=web

wrk -t1 -c8 -d2s -H 'Host: www.shop.test' "https://127.0.0.1:$NGINX_TLS_PORT/cart/w" \
	>"$T/wrk.out" 2>&1 || fail "wrk: $(cat "$T/wrk.out")"
# wrk's last requests are logged once nginx has seen its connections go
wait_for 20 conns_gone $NGINX_TLS_PORT || fail "connections to nginx still open after wrk"
total=$(mmlogcount shop/web)
log "chrooted nginx served $total TLS requests to shop/web ($(grep -o '[0-9]* requests in' "$T/wrk.out"))"
[ "$total" -gt $((N + 20 + 100)) ] || fail "wrk made too few requests: $(cat "$T/wrk.out")"
expect_metric "$total" "TLS requests under wrk, downstream" $DOWN k8s_httproute_name=web
expect_metric "$total" "TLS requests under wrk, upstream" $UP k8s_httproute_name=web
[ "$(metric $DOWN k8s_httproute_name=unmatched)" = 0 ] || fail "TLS requests unmatched"
stop_agent
log "TLS capture of a chrooted nginx ok ($(grep -a -m1 -o 'OpenSSL 3\.[0-9.]*[a-z]*' "$J/opt/mm-tls/libcrypto.so.3"))"
