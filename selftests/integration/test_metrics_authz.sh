#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# --metrics-auth kubernetes on the agent, two tenants' routes on one
# Gateway under live traffic through nginx: namespace apps (routes api,
# wild) and shop (route web), plus unmatched traffic. The test API server
# answers TokenReview and SubjectAccessReview from its rules. Per token the
# set of series /metrics returns is exactly the full reader's set
# restricted to the tenant's routes (source series and the policy's target
# series alike), with no self-metric, no target_info and no unmatched
# series; once traffic stops each tenant's request counts equal nginx's
# access log for its hosts. No token: 401; a user with no permission: 403.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/k8s_api.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
cat >"$T/authz.json" <<'EOF'
{"users": {
  "tok-prom": {"username": "system:serviceaccount:monitoring:prometheus", "groups": ["system:serviceaccounts"]},
  "tok-apps": {"username": "apps-dev", "groups": ["system:authenticated"]},
  "tok-shop": {"username": "shop-dev", "groups": ["system:authenticated"]},
  "tok-eve": {"username": "eve", "groups": ["system:authenticated"]}},
 "rules": [
  {"users": ["system:serviceaccount:monitoring:prometheus"], "verbs": ["get"], "nonResourceURLs": ["/metrics"]},
  {"users": ["apps-dev"], "verbs": ["get"], "apiGroups": ["gateway.networking.k8s.io"], "resources": ["httproutes"], "namespaces": ["apps"]},
  {"users": ["shop-dev"], "verbs": ["get"], "apiGroups": ["gateway.networking.k8s.io"], "resources": ["httproutes"], "namespaces": ["shop"], "resourceNames": ["web"]}
 ]}
EOF
k8s_start_api --authz "$T/authz.json"
k8s_base_objects
EX="$ROOT/deploy/examples/contract"
kc apply -f "$EX/seed-scenario-upstream-request-count-metricdefinition.yaml" \
	-f "$EX/seed-scenario-upstream-request-count-metricpolicy.yaml" >/dev/null ||
	fail "kubectl apply of the upstream request count contract"
AGENT_SOURCE=(--kubeconfig "$T/kubeconfig")
start_agent --metrics-auth kubernetes --metrics-auth-ttl 5

# traffic to both tenants and to no route, running through the checks
HEY=()
traffic() {
	hey -z "$1" -c 2 -host api.example.com "http://127.0.0.1:$PROXY_PORT/v1/x" >/dev/null &
	HEY+=($!)
	hey -z "$1" -c 2 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/static/x" >/dev/null &
	HEY+=($!)
	hey -z "$1" -c 1 -host nobody.test "http://127.0.0.1:$PROXY_PORT/" >/dev/null &
	HEY+=($!)
}
traffic 12s

# check.py TOKEN TENANT: compare the tenant's scrape with the full
# reader's, taken right after it (series identities, not values: counts
# move under traffic)
cat >"$T/check.py" <<'PY'
import sys, urllib.request, urllib.error
sys.path.insert(0, sys.argv[1])
import promtext
url, tok, ns = sys.argv[2], sys.argv[3], sys.argv[4]
def get(t):
    r = urllib.request.Request(url, headers={"Authorization": "Bearer " + t})
    try:
        with urllib.request.urlopen(r, timeout=10) as f:
            return f.status, f.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
def ids(body):
    return {(n, tuple(sorted(l.items()))) for n, l, _ in promtext.parse(body)}
code, mine = get(tok)
assert code == 200, (code, mine[:300])
_, full = get("tok-prom")
mine, full = ids(mine), ids(full)
def owner(labels):
    d = dict(labels)
    if d.get("k8s_httproute_name") in ("unmatched", "unknown"):
        return None
    return d.get("k8s_namespace_name") or d.get("resource_namespace")
want = {s for s in full if owner(s[1]) == ns}
assert any(n.startswith("milometer_") for n, _ in full), "no self-metrics for the full reader"
assert any(dict(l).get("k8s_httproute_name") == "unmatched" for _, l in full), "no unmatched series"
assert any(n.startswith("gateway_networking_k8s_io_") for n, _ in want), "no target series in the tenant's set"
assert any(n.startswith("envoy_") for n, _ in want), "no source series in the tenant's set"
extra, missing = mine - want, want - mine
assert not extra and not missing, ("extra", sorted(extra)[:5], "missing", sorted(missing)[:5])
print(len(mine), "series of", len(full))
PY
both_seen() {
	local b
	b=$(metrics_tok tok-prom) || return 1
	grep -q 'k8s_namespace_name="shop"' <<<"$b" &&
		grep -q 'k8s_namespace_name="apps"' <<<"$b" &&
		grep -q 'resource_namespace="shop"' <<<"$b"
}
metrics_tok() { curl -fsS -H "Authorization: Bearer $1" "$METRICS_URL"; }
wait_for 20 both_seen || fail "the full reader does not see both tenants: $(metrics_tok tok-prom | grep -c .) lines; $(tail -5 "$T/agent.out")"

n=$($PY "$T/check.py" "$IT_DIR" "$METRICS_URL" tok-apps apps) || fail "tenant apps under traffic: $n"
log "tenant apps: $n"
n=$($PY "$T/check.py" "$IT_DIR" "$METRICS_URL" tok-shop shop) || fail "tenant shop under traffic: $n"
log "tenant shop: $n"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer tok-eve" "$METRICS_URL")
[ "$code" = 403 ] || fail "no permission: HTTP $code"
code=$(curl -s -o /dev/null -w '%{http_code}' "$METRICS_URL")
[ "$code" = 401 ] || fail "no token: HTTP $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer forged" "$METRICS_URL")
[ "$code" = 401 ] || fail "bad token: HTTP $code"

# counts, once traffic is over: each tenant's own view equals nginx's log
wait "${HEY[@]}"
sum_tok() { # TOKEN ROUTE: downstream requests of ROUTE as TOKEN sees them
	metrics_tok "$1" | $PY -c '
import sys
sys.path.insert(0, sys.argv[1])
import promtext
print(int(promtext.total(promtext.parse(sys.stdin.read()), "envoy_http_downstream_rq_total", k8s_httproute_name=sys.argv[2])))' "$IT_DIR" "$2"
}
hits() { grep -c $'\t'"$1"$'\t' "$NGINX_LOG" || true; }
settled() { [ "$(sum_tok tok-apps api)" = "$(hits 'api\.example\.com')" ] && [ "$(sum_tok tok-shop web)" = "$(hits 'www\.shop\.test')" ]; }
wait_for 20 settled || fail "tenant counts differ from nginx's log: apps/api $(sum_tok tok-apps api) vs $(hits 'api\.example\.com'), shop/web $(sum_tok tok-shop web) vs $(hits 'www\.shop\.test')"
log "apps/api $(hits 'api\.example\.com') requests, shop/web $(hits 'www\.shop\.test'), each as its tenant reads it"
[ "$(sum_tok tok-shop api)" = 0 ] || fail "shop reads apps' counts"
# the reviews the agent sent: namespace-wide, then per object for shop
curl -fsS "http://127.0.0.1:$K8S_CTL_PORT/ctl/reviews" >"$T/reviews.json"
$PY - "$T/reviews.json" <<'PY' || fail "reviews: $(head -c 1500 "$T/reviews.json")"
import json, sys
rv = [r["spec"] for r in json.load(open(sys.argv[1])) if r["kind"] == "SubjectAccessReview"]
shop = [s["resourceAttributes"] for s in rv if s["user"] == "shop-dev" and "resourceAttributes" in s]
assert {"namespace": "shop", "verb": "get", "group": "gateway.networking.k8s.io", "resource": "httproutes"} in shop, shop
assert {"namespace": "shop", "verb": "get", "group": "gateway.networking.k8s.io", "resource": "httproutes", "name": "web"} in shop, shop
PY
# what authorization costs, in the agent's own self-metrics (full readers only)
full=$(metrics_tok tok-prom)
grep -Eq '^milometer_metrics_auth_reviews_total\{.*review="access".*\} [1-9]' <<<"$full" ||
	fail "no access reviews counted: $(grep metrics_auth <<<"$full")"
apps=$(metrics_tok tok-apps)
grep -q '^milometer_' <<<"$apps" && fail "a tenant reads self-metrics"
stop_agent
