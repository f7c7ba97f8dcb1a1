#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Shared by the selftests/k8s tests: a CA and server cert made per test with
# openssl, the test API server (selftests/tools/k8s_apiserver.py) on free
# loopback ports, a kubeconfig for it, and polling helpers. No root needed.
set -u
K8S_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$K8S_DIR/../.." && pwd)
APISERVER="$ROOT/selftests/tools/k8s_apiserver.py"
# Debian's python: python3-kubernetes and python3-yaml are its packages
PY=/usr/bin/python3
T=$(mktemp -d "${MM_K8S_TMP:-/tmp}/mm-k8s.XXXXXX")
PIDS=()
TOKEN=tok-$RANDOM$RANDOM

log() { echo "  $*"; }
fail() { echo "FAIL: $*"; exit 1; }

cleanup() {
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	# processes started in subshells never made it into PIDS: every one of
	# them names this test's directory in its arguments
	pkill -TERM -f "$T/" 2>/dev/null
	for p in $(seq 50); do
		pgrep -f "$T/" >/dev/null || break
		sleep 0.1
	done
	pkill -KILL -f "$T/" 2>/dev/null
	if [ -n "${KEEP:-}" ]; then echo "kept $T"; else rm -rf "$T" 2>/dev/null; rm -rf "$T"; fi
}
trap cleanup EXIT

# free_port: a TCP port nobody listens on now
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# make_certs: CA, server cert for 127.0.0.1/localhost, a client cert (CN=certuser)
make_certs() {
	local c="$T/pki"
	mkdir -p "$c"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$c/ca.key" -out "$c/ca.crt" \
		-days 1 -subj /CN=mm-test-ca >/dev/null 2>&1 || fail "openssl CA"
	openssl req -newkey rsa:2048 -nodes -keyout "$c/server.key" -out "$c/server.csr" \
		-subj /CN=kube-apiserver >/dev/null 2>&1 || fail "openssl csr"
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$c/ext"
	openssl x509 -req -in "$c/server.csr" -CA "$c/ca.crt" -CAkey "$c/ca.key" \
		-CAcreateserial -out "$c/server.crt" -days 1 -extfile "$c/ext" \
		>/dev/null 2>&1 || fail "openssl sign"
	openssl req -newkey rsa:2048 -nodes -keyout "$c/client.key" -out "$c/client.csr" \
		-subj /CN=certuser >/dev/null 2>&1 || fail "openssl client csr"
	openssl x509 -req -in "$c/client.csr" -CA "$c/ca.crt" -CAkey "$c/ca.key" \
		-CAcreateserial -out "$c/client.crt" -days 1 >/dev/null 2>&1 || fail "openssl client sign"
}

# start_apiserver [extra args]: sets API_PORT, CTL_PORT, KUBECONFIG
start_apiserver() {
	[ -f "$T/pki/ca.crt" ] || make_certs
	API_PORT=${API_PORT:-$(free_port)}
	CTL_PORT=${CTL_PORT:-$(free_port)}
	$PY "$APISERVER" --listen 127.0.0.1:$API_PORT --ctl 127.0.0.1:$CTL_PORT \
		--cert "$T/pki/server.crt" --key "$T/pki/server.key" \
		--client-ca "$T/pki/ca.crt" --token "$TOKEN" --state "$T/state.json" \
		"$@" >>"$T/apiserver.log" 2>&1 &
	API_PID=$!
	PIDS+=($API_PID)
	wait_for 20 ctl_up || fail "test apiserver did not start: $(tail -5 "$T/apiserver.log")"
	export KUBECONFIG="$T/kubeconfig"
	write_kubeconfig "$KUBECONFIG" "$TOKEN"
}

# stop_apiserver: SIGTERM (state saved), like a kube-apiserver restart
stop_apiserver() {
	kill "$API_PID" 2>/dev/null
	wait "$API_PID" 2>/dev/null
}

ctl_up() { curl -s -o /dev/null "http://127.0.0.1:$CTL_PORT/ctl/rv"; }

# ctl PATH [JSON]: drive the test server
ctl() {
	if [ $# -gt 1 ]; then
		# the body on stdin: bulk object lists exceed an argument's size
		printf '%s' "$2" | curl -s -X POST -H 'Content-Type: application/json' \
			--data-binary @- "http://127.0.0.1:$CTL_PORT$1"
	else
		curl -s "http://127.0.0.1:$CTL_PORT$1"
	fi
}

write_kubeconfig() {
	cat >"$1" <<EOK
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(base64 -w0 "$T/pki/ca.crt")
users:
- name: test
  user:
    token: $2
contexts:
- name: test
  context: {cluster: test, user: test}
current-context: test
EOK
}

# wait_for SECONDS CMD...: poll CMD every 0.1 s
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	while ! "$@"; do
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.1
	done
}

# objects_json KIND... helpers: bulk create through the ctl port
ns_obj() { printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%s"}}' "$1"; }
route_obj() { # NS NAME HOST [PATH]
	printf '{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"%s","namespace":"%s"},"spec":{"parentRefs":[{"name":"gw","namespace":"infra"}],"hostnames":["%s"],"rules":[{"matches":[{"path":{"type":"PathPrefix","value":"%s"}}],"backendRefs":[{"name":"py","port":18181}]}]}}' \
		"$2" "$1" "$3" "${4:-/}"
}
put_objects() { # JSON objects...
	local IFS=,
	ctl /ctl/objects "{\"objects\":[$*]}" >/dev/null
}

# jget FILE KEY.PATH: a value from a JSON file ("" when absent)
jget() {
	python3 - "$1" "$2" <<'PY' 2>/dev/null
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    print(""); sys.exit(0)
for k in sys.argv[2].split("."):
    d = d.get(k) if isinstance(d, dict) else None
print("" if d is None else d)
PY
}
# stat_ge FILE KEY N: counter KEY in the stats file is at least N
stat_ge() { local v; v=$(jget "$1" "$2"); [ -n "$v" ] && [ "$v" -ge "$3" ]; }
stat_is() { [ "$(jget "$1" "$2")" = "$3" ]; }
has_line() { grep -qE "$2" "$1"; }
count_lines() { grep -cE "$2" "$1"; }

# requests [FILTER]: "METHOD PATH CODE" per request the server saw
requests() {
	ctl /ctl/requests | python3 2>/dev/null -c '
import json, sys
for r in json.load(sys.stdin):
    print(r["method"], r["path"], r["code"], "%.3f" % r["t"], r["bytes"], r["ua"])'
}

# run_tests NAME...: run functions, print "N passed, N failed"
run_tests() {
	local pass=0 failn=0 t
	for t in "$@"; do
		if ( "$t" ); then
			echo "ok   $t"
			pass=$((pass + 1))
		else
			echo "FAIL $t"
			failn=$((failn + 1))
		fi
	done
	echo "$pass passed, $failn failed"
	[ $failn -eq 0 ]
}
