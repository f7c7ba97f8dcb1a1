#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The agent's probes as the kubelet sees them, with its routes from a
# Kubernetes API server that is not there yet: /healthz answers 200 from
# the start, /readyz 503 with a one-line reason (what it waits for) while
# the BPF programs load and while not every watched resource has been
# listed, and 200 once the API server is up and listed, after which the
# agent counts nginx's traffic exactly (access log as ground truth).
. "$(dirname "$0")/lib.sh"
. "$IT_DIR/k8s_api.sh"
need_root
need_bin milometer gen_nginx
command -v kubectl >/dev/null || fail "kubectl is not installed"
use_manifests base
start_backends
start_nginx
k8s_certs
k8s_kubeconfig
port_free $K8S_API_PORT
AGENT_SOURCE=(--kubeconfig "$T/kubeconfig")
AGENT_NO_WAIT=1 start_agent

code() { curl -s -o "$T/body" -w '%{http_code}' "$AGENT_URL$1"; }
healthz_ok() { [ "$(code /healthz)" = 200 ]; }
waits_for_api() { [ "$(code /readyz)" = 503 ] && grep -q "Kubernetes API server" "$T/body"; }
ready() { [ "$(code /readyz)" = 200 ]; }

wait_for 30 healthz_ok || fail "no /healthz 200 within 30 s of start: $(tail -5 "$T/agent.out")"
c=$(code /readyz)
[ "$c" = 503 ] || fail "/readyz $c while starting with no API server, want 503"
[ "$(wc -l <"$T/body")" = 1 ] || fail "the 503 reason is not one line: $(cat "$T/body")"
log "starting: /readyz 503 \"$(cat "$T/body")\""
# past the agent's first-sync wait it runs on what it has, still not ready
wait_for 30 waits_for_api || fail "/readyz $(code /readyz) \"$(cat "$T/body")\": want 503 naming the API server"
wait_for 10 grep -q "attached" "$T/agent.out" || fail "the agent has not attached: $(tail -3 "$T/agent.out")"
log "attached, API away: /readyz 503 \"$(cat "$T/body")\""
healthz_ok || fail "/healthz $(code /healthz) while waiting for the API server"

k8s_start_api
k8s_base_objects
wait_for 40 ready || fail "/readyz still $(code /readyz) \"$(cat "$T/body")\" 40 s after the API server started"
log "ready once the API server is up"
# the routes from the API installed (the empty table at start was the first)
routes_from_api() { ctl routes | grep -q 'apps/'; }
wait_for 20 routes_from_api || fail "the API's HTTPRoutes not in the agent's table: $(ctl routes | head -5)"
hey -n 200 -c 2 -host api.example.com "http://127.0.0.1:$PROXY_PORT/v1/status" >/dev/null
compare_log --ignore-unrouted --expect-total 200
