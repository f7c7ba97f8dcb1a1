#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `milometer controller --metrics-auth kubernetes` against the test API
# server's TokenReview and SubjectAccessReview: per token, the set of
# series /metrics returns is exactly the expected set, computed here from
# the routes the rules allow (never from the agent): a full reader (get on
# /metrics) reads everything, tenants only the series of HTTPRoutes they
# may get, a hostile policy forging resource_namespace shows nothing to
# the namespace it names, 401 without or with a bad token, 403 with no
# permission, 503 while the API server is down (a cached decision serves
# until its TTL, none after it), a revoked permission stops within the
# TTL. The reviews are the real ones: kubectl issues the tenant's token
# (TokenRequest) and kubectl auth can-i agrees with every decision.
. "$(dirname "$0")/lib.sh"
M="$ROOT/bin/milometer"
[ -x "$M" ] || fail "build bin/milometer first"
TTL=3

# who is who: tokens -> users; rules as RBAC would have them
authz_json() { # $1: alice's rule present (1/0)
	cat <<EOF
{"users": {
  "tok-prom": {"username": "system:serviceaccount:monitoring:prometheus", "uid": "u-prom",
               "groups": ["system:serviceaccounts", "system:authenticated"]},
  "tok-alice": {"username": "alice", "uid": "u-alice", "groups": ["team-a-devs", "system:authenticated"],
                "extra": {"iam.miloapis.com/parent-name": ["project-a"],
                          "iam.miloapis.com/parent-type": ["Project"]}},
  "tok-bob": {"username": "bob", "uid": "u-bob", "groups": ["system:authenticated"]},
  "tok-eve": {"username": "eve", "uid": "u-eve", "groups": ["system:authenticated"]}},
 "rules": [
  {"users": ["system:serviceaccount:monitoring:prometheus"], "verbs": ["get"], "nonResourceURLs": ["/metrics"]},
  $([ "$1" = 1 ] && echo '{"groups": ["team-a-devs"], "verbs": ["get", "list", "watch"], "apiGroups": ["gateway.networking.k8s.io"], "resources": ["httproutes"], "namespaces": ["team-a"]},')
  {"users": ["bob"], "verbs": ["get"], "apiGroups": ["gateway.networking.k8s.io"], "resources": ["httproutes"], "namespaces": ["team-b"], "resourceNames": ["web"]},
  {"groups": ["system:serviceaccounts:team-c"], "verbs": ["get"], "apiGroups": ["gateway.networking.k8s.io"], "resources": ["httproutes"], "namespaces": ["team-c"]}
 ]}
EOF
}
authz_json 1 >"$T/authz.json"
start_apiserver --authz "$T/authz.json"
kubectl apply -f - >/dev/null <<EOF || fail "namespaces"
apiVersion: v1
kind: Namespace
metadata: {name: milometer}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-c}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: reader, namespace: team-c}
EOF
EX="$ROOT/deploy/examples/contract"
kubectl apply -f "$EX/extra-httproute-created-metricdefinition.yaml" \
	-f "$EX/extra-httproute-created-metricpolicy.yaml" >/dev/null || fail "apply contract"
# the hostile policy: every route's series claims namespace team-b
kubectl apply -f - >/dev/null <<'EOF' || fail "apply hostile policy"
apiVersion: telemetry.miloapis.com/v1alpha1
kind: MetricDefinition
metadata: {name: forged}
spec:
  resource: {group: gateway.networking.k8s.io, kind: HTTPRoute}
  metric:
    name: gateway.networking.k8s.io.httproute.forged
    instrument: {type: Gauge, unit: "1"}
  labels:
    - {key: resource_name, required: true}
    - {key: resource_namespace, required: true}
    - {key: resource_uid, required: true}
---
apiVersion: telemetry.miloapis.com/v1alpha1
kind: MetricPolicy
metadata: {name: forged-policy}
spec:
  subject: {group: gateway.networking.k8s.io, version: v1, kind: HTTPRoute}
  targetMetric: {name: gateway.networking.k8s.io.httproute.forged}
  source:
    type: ResourceFields
    resourceFields:
      seriesFrom:
        path: "resource"
        value: {cel: "1"}
        labels:
          resource_name: "resource.metadata.name"
          resource_namespace: "'team-b'"
          resource_uid: "string(resource.metadata.uid)"
EOF
ROUTES="team-a/web team-a/api team-b/web team-b/shop team-c/web"
objs=("$(ns_obj team-a)" "$(ns_obj team-b)")
for r in $ROUTES; do objs+=("$(route_obj "${r%/*}" "${r#*/}" "${r#*/}.${r%/*}.test")"); done
put_objects "${objs[@]}"

PORT=$(free_port)
"$M" controller --identity c1 --leader-elect-namespace milometer \
	--prometheus-listen "127.0.0.1:$PORT" --metrics-auth kubernetes \
	--metrics-auth-ttl $TTL --metrics-auth-extra 'iam.miloapis.com/parent-api-group=resourcemanager.miloapis.com' \
	>"$T/c1.log" 2>&1 &
PIDS+=($!)

# scrape TOKEN OUT: HTTP status; body in OUT
scrape() {
	local h=()
	[ -n "$1" ] && h=(-H "Authorization: Bearer $1")
	curl -sS -o "$2" -w '%{http_code}' "${h[@]}" "http://127.0.0.1:$PORT/metrics"
}
# series FILE: "metric ns/name" per sample, sorted (a multiset: the forged
# series of web in three namespaces all read team-b/web)
series() {
	python3 - "$1" <<'PY'
import re, sys
out = []
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        continue
    name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
    labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("{", 1)[1].rsplit("}", 1)[0])) if "{" in line else {}
    out.append(f'{name} {labels.get("resource_namespace", "-")}/{labels.get("resource_name", "-")}')
print("\n".join(sorted(out)))
PY
}
# expected ROUTE...: the set a reader of exactly these routes must get;
# the forged series carry team-b whatever the route's namespace
expected() {
	for r in "$@"; do
		echo "gateway_networking_k8s_io_httproute_created_seconds $r"
		echo "gateway_networking_k8s_io_httproute_forged_ratio team-b/${r#*/}"
	done | sort
}
all_there() {
	# until the controller listens, curl's "couldn't connect" is expected
	[ "$(scrape tok-prom "$T/all.txt" 2>/dev/null)" = 200 ] &&
		[ "$(series "$T/all.txt" | grep -c forged)" = 5 ] &&
		[ "$(series "$T/all.txt" | grep -c created)" = 5 ]
}
wait_for 30 all_there || fail "the full reader never saw the 10 route series: $(series "$T/all.txt"); $(tail -3 "$T/c1.log")"
# the forged metric's unit "1" makes _ratio; check the names once
grep -q '^gateway_networking_k8s_io_httproute_forged_ratio{' "$T/all.txt" || fail "forged series name: $(grep forged "$T/all.txt" | head -2)"

# same_set TOKEN ROUTES...: 200 and exactly expected(ROUTES)
same_set() {
	local tok=$1 code
	shift
	code=$(scrape "$tok" "$T/$tok.txt")
	[ "$code" = 200 ] || fail "$tok: HTTP $code: $(cat "$T/$tok.txt")"
	diff <(series "$T/$tok.txt") <(expected "$@") >"$T/$tok.diff" ||
		fail "$tok: not exactly the expected set (< got, > want): $(cat "$T/$tok.diff")"
}

t_full_reader_reads_everything() {
	local code
	code=$(scrape tok-prom "$T/tok-prom.txt")
	[ "$code" = 200 ] || fail "tok-prom: HTTP $code: $(cat "$T/tok-prom.txt")"
	# every route series, and the controller's own self-metrics (bound to
	# no object: only a reader of everything gets them)
	diff <(series "$T/tok-prom.txt" | grep -v '^milometer_') <(expected $ROUTES) >"$T/tok-prom.diff" ||
		fail "tok-prom: not exactly the expected route series (< got, > want): $(cat "$T/tok-prom.diff")"
	series "$T/tok-prom.txt" >"$T/tok-prom.series"
	grep -q '^milometer_k8s_watch_up ' "$T/tok-prom.series" ||
		fail "tok-prom: the controller's self-metrics are missing"
}

t_tenant_a_reads_team_a() {
	same_set tok-alice team-a/web team-a/api
}

t_tenant_b_reads_one_route() {
	same_set tok-bob team-b/web
	# the forged series of team-a/web says team-b/web: bob must not have it
	grep 'forged' "$T/tok-bob.txt" | grep -v '^#' | grep -c . | grep -qx 1 ||
		fail "bob sees forged series of other namespaces: $(grep forged "$T/tok-bob.txt")"
}

# A TokenRequest for service account $2 of namespace $1, issued by kubectl:
# `kubectl create token` (1.24+), else the same POST of the serviceaccounts
# token subresource through `kubectl create --raw` (Debian 12's kubectl is 1.20).
token_request() {
	if kubectl create token --help 2>/dev/null | grep -q "service account token"; then
		kubectl create token "$2" -n "$1"
		return
	fi
	printf '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"audiences":[]}}' >"$T/tokenrequest.json"
	kubectl create --raw "/api/v1/namespaces/$1/serviceaccounts/$2/token" -f "$T/tokenrequest.json" |
		$PY -c 'import json, sys; r = json.load(sys.stdin); assert r["kind"] == "TokenRequest", r; print(r["status"]["token"])'
}

t_serviceaccount_token_from_kubectl() {
	local tok
	tok=$(token_request team-c reader) || fail "kubectl: TokenRequest for team-c/reader"
	[ -n "$tok" ] || fail "empty token"
	same_set "$tok" team-c/web
	# kubectl auth can-i with the tenant's own token agrees with the filter
	[ "$(kubectl --token "$tok" auth can-i get httproutes -n team-c)" = yes ] || fail "can-i team-c"
	[ "$(kubectl --token "$tok" auth can-i get httproutes -n team-a 2>/dev/null)" = no ] || fail "can-i team-a"
	[ "$(kubectl --token "$tok" auth can-i get /metrics 2>/dev/null)" = no ] || fail "can-i /metrics"
	[ "$(kubectl --token tok-prom auth can-i get /metrics)" = yes ] || fail "can-i /metrics for prom"
}

t_no_permission_403() {
	local code
	code=$(scrape tok-eve "$T/eve.txt")
	[ "$code" = 403 ] || fail "eve: HTTP $code: $(head -3 "$T/eve.txt")"
	grep -q '^gateway' "$T/eve.txt" && fail "eve's 403 carries series"
	return 0
}

t_invalid_and_missing_token_401() {
	local code
	code=$(scrape garbage-token "$T/bad.txt")
	[ "$code" = 401 ] || fail "bad token: HTTP $code"
	code=$(scrape "" "$T/none.txt")
	[ "$code" = 401 ] || fail "no token: HTTP $code"
	curl -sS -D "$T/h.txt" -o /dev/null "http://127.0.0.1:$PORT/metrics"
	grep -qi '^WWW-Authenticate: Bearer' "$T/h.txt" || fail "401 without WWW-Authenticate: $(cat "$T/h.txt")"
	# /healthz stays open: kubelet probes carry no token
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz")" = 200 ] || fail "healthz"
}

t_reviews_have_kube_shapes() {
	ctl /ctl/reviews >"$T/reviews.json"
	python3 - "$T/reviews.json" <<'PY' || fail "reviews: $(head -c 2000 "$T/reviews.json")"
import json, sys
rv = json.load(open(sys.argv[1]))
tr = [r for r in rv if r["kind"] == "TokenReview"]
sar = [r for r in rv if r["kind"] == "SubjectAccessReview"]
assert tr and sar, (len(tr), len(sar))
for r in sar:
    s = r["spec"]
    assert ("resourceAttributes" in s) != ("nonResourceAttributes" in s), s
    if "nonResourceAttributes" in s:
        assert s["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}, s
    else:
        a = s["resourceAttributes"]
        assert a["group"] == "gateway.networking.k8s.io" and a["resource"] == "httproutes", a
        assert a["verb"] == "get" and a["namespace"].startswith("team-"), a
    assert s["user"] and s["groups"], s
    # the caller's extra unchanged, plus the configured field
    ex = s.get("extra", {})
    assert ex.get("iam.miloapis.com/parent-api-group") == ["resourcemanager.miloapis.com"], s
    if s["user"] == "alice":
        assert ex["iam.miloapis.com/parent-name"] == ["project-a"], s
        assert ex["iam.miloapis.com/parent-type"] == ["Project"], s
# namespace-wide first, then per object: bob's team-b is denied
# namespace-wide, so team-b/web and team-b/shop are asked by name
bob = [r["spec"]["resourceAttributes"] for r in sar
       if r["spec"]["user"] == "bob" and "resourceAttributes" in r["spec"]]
assert {"namespace": "team-b", "verb": "get", "group": "gateway.networking.k8s.io",
        "resource": "httproutes"} in bob, bob
assert any(a.get("name") == "web" for a in bob) and any(a.get("name") == "shop" for a in bob), bob
# alice is allowed namespace-wide: never asked per object in team-a
al = [r["spec"]["resourceAttributes"] for r in sar
      if r["spec"]["user"] == "alice" and "resourceAttributes" in r["spec"]]
assert not any(a["namespace"] == "team-a" and "name" in a for a in al), al
PY
}

# cached decisions: a second scrape within the TTL sends no review
t_cache_within_ttl() {
	local n0 n1
	sleep $((TTL + 1)) # alice's decisions expire: the next scrape is cold
	ctl /ctl/reviews '{}' >/dev/null
	same_set tok-alice team-a/web team-a/api
	n0=$(ctl /ctl/reviews | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
	same_set tok-alice team-a/web team-a/api
	n1=$(ctl /ctl/reviews | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
	[ "$n1" = "$n0" ] || fail "a scrape within the TTL sent $((n1 - n0)) reviews"
	# cold: TokenReview, /metrics, 3 namespaces, then by name the 3 routes
	# of the 2 namespaces alice may not get namespace-wide (docs/tenancy.md)
	[ "$n0" = 8 ] || fail "alice's cold scrape sent $n0 reviews, want 2 + 3 + 3"
	echo "    alice's cold scrape: $n0 reviews, warm: 0"
}

t_revoked_within_ttl() {
	local t0
	same_set tok-alice team-a/web team-a/api
	authz_json 0 >"$T/authz-revoked.json"
	ctl /ctl/authz "$(cat "$T/authz-revoked.json")" >/dev/null
	t0=$SECONDS
	revoked() { [ "$(scrape tok-alice "$T/alice-r.txt")" = 403 ]; }
	wait_for $((TTL + 2)) revoked || fail "alice still reads after $((SECONDS - t0)) s (TTL $TTL): $(series "$T/alice-r.txt")"
	echo "    revocation seen after $((SECONDS - t0)) s (TTL $TTL s)"
	ctl /ctl/authz "$(cat "$T/authz.json")" >/dev/null
}

t_api_down_fails_closed() {
	local code
	sleep $((TTL + 1)) # nothing cached for bob
	same_set tok-bob team-b/web # cached now
	stop_apiserver
	# within the TTL, the fresh decisions serve
	code=$(scrape tok-bob "$T/bob-down.txt")
	[ "$code" = 200 ] || fail "bob within TTL, API down: HTTP $code: $(cat "$T/bob-down.txt")"
	# alice's decisions expired long ago (or never cached since revocation)
	code=$(scrape tok-eve "$T/eve-down.txt")
	[ "$code" = 503 ] || fail "uncached, API down: HTTP $code"
	sleep $((TTL + 1))
	code=$(scrape tok-bob "$T/bob-down2.txt")
	[ "$code" = 503 ] || fail "past the TTL, API down: HTTP $code: $(head -3 "$T/bob-down2.txt")"
	grep -q '^gateway' "$T/bob-down2.txt" && fail "503 carries series"
	code=$(scrape tok-prom "$T/prom-down.txt")
	[ "$code" = 503 ] || fail "full reader past the TTL, API down: HTTP $code"
	start_apiserver --authz "$T/authz.json"
	same_set tok-bob team-b/web
}

# python3-kubernetes' typed models read the reviews back: its generated
# client checks required fields (status.allowed) and types
t_python_client_reviews() {
	$PY - "$KUBECONFIG" >"$T/pyrev.out" 2>&1 <<'PY' || fail "python3-kubernetes reviews: $(cat "$T/pyrev.out")"
import sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
tr = client.AuthenticationV1Api().create_token_review(
    client.V1TokenReview(spec=client.V1TokenReviewSpec(token="tok-alice")))
assert tr.status.authenticated and tr.status.user.username == "alice", tr.status
assert tr.status.user.extra["iam.miloapis.com/parent-name"] == ["project-a"], tr.status
bad = client.AuthenticationV1Api().create_token_review(
    client.V1TokenReview(spec=client.V1TokenReviewSpec(token="nope")))
assert not bad.status.authenticated and bad.status.error, bad.status
az = client.AuthorizationV1Api()
def sar(user, groups, **ra):
    return az.create_subject_access_review(client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
        user=user, groups=groups, resource_attributes=client.V1ResourceAttributes(**ra)))).status.allowed
assert sar("alice", ["team-a-devs"], verb="get", group="gateway.networking.k8s.io", resource="httproutes", namespace="team-a")
assert not sar("alice", ["team-a-devs"], verb="get", group="gateway.networking.k8s.io", resource="httproutes", namespace="team-b")
assert sar("bob", [], verb="get", group="gateway.networking.k8s.io", resource="httproutes", namespace="team-b", name="web")
assert not sar("bob", [], verb="get", group="gateway.networking.k8s.io", resource="httproutes", namespace="team-b")
nr = az.create_subject_access_review(client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
    user="system:serviceaccount:monitoring:prometheus",
    non_resource_attributes=client.V1NonResourceAttributes(path="/metrics", verb="get"))))
assert nr.status.allowed and nr.kind == "SubjectAccessReview", nr
try:
    az.create_subject_access_review(client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(user="x")))
    raise SystemExit("a review without attributes was accepted")
except client.exceptions.ApiException as e:
    assert e.status == 422, e.status
print("typed TokenReview and SubjectAccessReview round trips ok")
PY
}

# the leak checker fires: alice's expected set against the full body
t_checker_fires() {
	! diff <(series "$T/all.txt") <(expected team-a/web team-a/api) >/dev/null ||
		fail "the set comparison cannot tell a full body from alice's"
}

run_tests t_full_reader_reads_everything t_tenant_a_reads_team_a t_tenant_b_reads_one_route \
	t_serviceaccount_token_from_kubectl t_no_permission_403 t_invalid_and_missing_token_401 \
	t_reviews_have_kube_shapes t_python_client_reviews t_cache_within_ttl t_revoked_within_ttl t_api_down_fails_closed \
	t_checker_fires
