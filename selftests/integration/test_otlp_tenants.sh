#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# --otlp-tenant-from namespace-label:KEY against bin/otlp_sink: namespaces
# apps and shop carry KEY (tenants team-apps, team-shop); unmatched traffic
# and self-metrics are bound to no object and go to the default tenant
# "platform". Every request holds one Resource of one tenant, with
# X-Scope-OrgID equal to its KEY attribute, and only points of that
# tenant's routes; the last request of each tenant (cumulative counts)
# holds exactly nginx's count for its routes, and the tenants' counts add
# up to every request nginx logged, as one unsplit export would.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/k8s_api.sh"
need_root
need_bin milometer gen_nginx otlp_sink
use_manifests base
start_backends
start_nginx
port_free $SINK_PORT
mkdir -p "$T/otlp"
start_bg otlp-sink stdbuf -oL "$BIN/otlp_sink" --port $SINK_PORT --dir "$T/otlp" --quiet
wait_for 10 listening $SINK_PORT || fail "otlp_sink did not start: $(cat "$T/otlp-sink.out")"
k8s_start_api
k8s_base_objects
KEY=tenant.example.com/id
kc label namespace apps "$KEY=team-apps" >/dev/null || fail "kubectl label apps"
kc label namespace shop "$KEY=team-shop" >/dev/null || fail "kubectl label shop"
EX="$ROOT/deploy/examples/contract"
kc apply -f "$EX/seed-scenario-upstream-request-count-metricdefinition.yaml" \
	-f "$EX/seed-scenario-upstream-request-count-metricpolicy.yaml" >/dev/null ||
	fail "kubectl apply of the upstream request count contract"
AGENT_SOURCE=(--kubeconfig "$T/kubeconfig")
start_agent --otlp-endpoint "http://127.0.0.1:$SINK_PORT" --export-interval 1 \
	--otlp-tenant-from "namespace-label:$KEY" --otlp-tenant-default platform

hey -n 300 -c 3 -host api.example.com "http://127.0.0.1:$PROXY_PORT/v1/x" >/dev/null
hey -n 200 -c 2 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/cart/1" >/dev/null
hey -n 100 -c 1 -host nobody.test "http://127.0.0.1:$PROXY_PORT/" >/dev/null
wait_log_lines "$NGINX_LOG" 600 || fail "nginx logged $(log_lines "$NGINX_LOG") of 600"
# two more export rounds after nginx logged everything
nreq() { ls "$T/otlp" | grep -c '\.pb$' || true; }
n0=$(nreq)
wait_for 30 eval '[ $(nreq) -ge $((n0 + 9)) ]' || fail "exports stopped: $(nreq) requests"
sleep 1.5 # the round in progress completes

cat >"$T/check.py" <<'PY'
import glob, os, sys
sys.path.insert(0, sys.argv[1])
import otlpcheck
d, key, api, web, unmatched = sys.argv[2], sys.argv[3], *map(int, sys.argv[4:7])
owner = {"apps": "team-apps", "shop": "team-shop"}
last = {}
nreq = 0
for pb in sorted(glob.glob(os.path.join(d, "req-*.pb"))):
    hdrs = [l.split(": ", 1) for l in open(pb[:-3] + ".headers").read().splitlines() if ": " in l]
    org = [v for k, v in hdrs if k.lower() == "x-scope-orgid"]
    assert len(org) == 1, (pb, hdrs)
    tree = otlpcheck.parse(otlpcheck.decode(pb))
    rms = tree.get("resource_metrics", [])
    assert len(rms) == 1, (pb, len(rms))
    res = otlpcheck.attrs(rms[0]["resource"][0])
    assert res.get(key) == org[0], (pb, res, org)
    for m in otlpcheck.metrics(tree):
        k = otlpcheck.kind(m)
        for p in m[k][0].get("data_points", []):
            a = otlpcheck.attrs(p)
            ns = a.get("k8s.namespace.name") or a.get("resource_namespace")
            route = a.get("k8s.httproute.name")
            want = "platform" if route in ("unmatched", "unknown") or not ns else owner.get(ns, "platform")
            assert want == org[0], (pb, m["name"][0], a, org[0])
    last[org[0]] = pb
    nreq += 1
assert set(last) == {"team-apps", "team-shop", "platform"}, sorted(last)
def count(t, **match):
    return sum(int(float(x)) for x in [otlpcheck_points(last[t], "envoy.http.downstream_rq_total", match)])
def otlpcheck_points(pb, name, match):
    total = 0.0
    for m in otlpcheck.metrics(otlpcheck.parse(otlpcheck.decode(pb))):
        if m["name"][0] != name:
            continue
        for p in m[otlpcheck.kind(m)][0].get("data_points", []):
            a = otlpcheck.attrs(p)
            if all(a.get(x) == y for x, y in match.items()):
                total += float(p.get("as_int", p.get("as_double", ["0"]))[0])
    return total
got = {t: count(t) for t in last}
assert count("team-apps", **{"k8s.httproute.name": "api"}) == api, (got, api)
assert got["team-apps"] == api, got
assert got["team-shop"] == web, (got, web)
assert got["platform"] == unmatched, (got, unmatched)
assert sum(got.values()) == api + web + unmatched, got
# the policy's target series went to the route's tenant too
tgt = "gateway.networking.k8s.io.httproute.delivery.upstream_request.count"
assert otlpcheck_points(last["team-apps"], tgt, {}) == api, otlpcheck_points(last["team-apps"], tgt, {})
assert otlpcheck_points(last["team-shop"], tgt, {}) == web
print(nreq, "requests;", got)
PY
out=$($PY "$T/check.py" "$IT_DIR" "$T/otlp" "$KEY" "$(mmlogcount apps/api)" "$(mmlogcount shop/web)" "$(mmlogcount unmatched)" 2>&1) ||
	fail "per-tenant export: $out"
log "$out"
body=$(metrics)
grep -q '^milometer_export_no_tenant' <<<"$body" || fail "no milometer_export_no_tenant self-metric"
stop_agent
