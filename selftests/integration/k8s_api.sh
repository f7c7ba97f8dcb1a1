# SPDX-License-Identifier: Apache-2.0
# Sourced by the test_k8s_*.sh integration tests after lib.sh: the test API
# server (selftests/tools/k8s_apiserver.py) with a CA made here, a
# kubeconfig whose token is read from a file (so it can rotate), and kubectl
# (the real client) to put manifests into it.
K8S_API_PORT=26443
K8S_CTL_PORT=26444
K8S_TOKEN=it-$RANDOM$RANDOM

k8s_certs() {
	local c="$T/pki"
	mkdir -p "$c"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$c/ca.key" -out "$c/ca.crt" \
		-days 1 -subj /CN=mm-it-ca >/dev/null 2>&1 || fail "openssl CA"
	openssl req -newkey rsa:2048 -nodes -keyout "$c/server.key" -out "$c/server.csr" \
		-subj /CN=kube-apiserver >/dev/null 2>&1 || fail "openssl csr"
	printf 'subjectAltName=IP:127.0.0.1\n' >"$c/ext"
	openssl x509 -req -in "$c/server.csr" -CA "$c/ca.crt" -CAkey "$c/ca.key" \
		-CAcreateserial -out "$c/server.crt" -days 1 -extfile "$c/ext" \
		>/dev/null 2>&1 || fail "openssl sign"
}

# k8s_start_api: (re)start the server; state survives in $T/k8s-state.json
k8s_start_api() {
	[ -f "$T/pki/ca.crt" ] || k8s_certs
	port_free $K8S_API_PORT
	start_bg k8s-api python3 "$ROOT/selftests/tools/k8s_apiserver.py" \
		--listen 127.0.0.1:$K8S_API_PORT --ctl 127.0.0.1:$K8S_CTL_PORT \
		--cert "$T/pki/server.crt" --key "$T/pki/server.key" \
		--token "$K8S_TOKEN" --state "$T/k8s-state.json" "$@"
	K8S_API_PID=$LAST_PID
	wait_for 20 curl -fs -o /dev/null "http://127.0.0.1:$K8S_CTL_PORT/ctl/rv" ||
		fail "the test API server did not start: $(tail -5 "$T/k8s-api.out")"
	[ -f "$T/kubeconfig" ] || k8s_kubeconfig
}

k8s_stop_api() { stop_pid "$K8S_API_PID"; }

k8s_kubeconfig() {
	echo "$K8S_TOKEN" >"$T/k8s-token"
	cat >"$T/kubeconfig" <<EOK
apiVersion: v1
kind: Config
clusters:
- name: it
  cluster: {server: "https://127.0.0.1:$K8S_API_PORT", certificate-authority: $T/pki/ca.crt}
users:
- name: it
  user: {tokenFile: $T/k8s-token}
contexts:
- name: it
  context: {cluster: it, user: it}
current-context: it
EOK
}

kc() { kubectl --kubeconfig "$T/kubeconfig" "$@"; }

# kc_status_merge PATH JSON: a JSON merge patch on the /status at API path
# PATH; by kubectl --subresource, or by python3-kubernetes for a kubectl
# without it (before 1.24: Debian 12's 1.20)
kc_status_merge() {
	local path=$1 body=$2 ns kind name
	if kubectl patch --help 2>/dev/null | grep -q -- '--subresource'; then
		# /api/v1/namespaces/NS/KIND/NAME/status
		ns=$(cut -d/ -f5 <<<"$path") kind=$(cut -d/ -f6 <<<"$path") name=$(cut -d/ -f7 <<<"$path")
		kc -n "$ns" patch "$kind" "$name" --subresource=status --type=merge -p "$body"
	else
		$PY "$ROOT/selftests/k8s/py_status_write.py" "$T/kubeconfig" merge "$path" "$body"
	fi
}

# k8s_base_objects [NS...]: the Namespaces of manifests/base (and NS...),
# then its Gateway and HTTPRoutes, into the API with kubectl
k8s_base_objects() {
	local ns
	for ns in infra apps shop "$@"; do
		printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\n' "$ns"
	done | kc apply -f - >/dev/null || fail "kubectl apply namespaces"
	kc apply -f "$T/manifests/" >/dev/null || fail "kubectl apply of the base manifests"
}
k8s_ctl() {
	curl -fsS -X POST -H 'Content-Type: application/json' --data "$2" \
		"http://127.0.0.1:$K8S_CTL_PORT$1" >/dev/null
}
# k8s_rotate_token: the server accepts only a new token; the file follows
k8s_rotate_token() {
	K8S_TOKEN=it-$RANDOM$RANDOM
	k8s_ctl /ctl/tokens "{\"valid\":[\"$K8S_TOKEN\"]}"
	echo "$K8S_TOKEN" >"$T/k8s-token.tmp"
	mv "$T/k8s-token.tmp" "$T/k8s-token"
}
