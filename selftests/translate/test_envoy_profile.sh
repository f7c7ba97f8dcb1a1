#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The envoy source profile: rules translated for a gateway without the
# agent, evaluated by promtool over a fixture in Envoy's own exposition
# format (testdata/envoy-stats.prom: one envoy_cluster_name label, Envoy
# Gateway's httproute/NS/NAME/rule/N clusters, le as Envoy prints it).
# The expected target series are worked out here from the fixture's numbers
# and the subjects' known uids, independently of milometer: clusters of
# unknown routes and non-route clusters are left out, every bound is mapped
# to seconds, no label the Envoy stats lack appears.
. "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || { bad "promtool missing: deploy/install-deps.sh installs Debian's prometheus"; finish; exit 1; }
M=$T/m
mkdir -p "$M"
cp "$ROOT"/selftests/integration/manifests/base/gateway.yaml \
	"$ROOT"/deploy/examples/contract/seed-scenario-upstream-*.yaml "$M/"
python3 - "$ROOT/selftests/integration/manifests/base/routes.yaml" "$M/routes.yaml" <<'PY'
import sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
for d in docs:
    m = d["metadata"]
    m["uid"] = "00000000-0000-4000-8000-%012d" % (len(m["namespace"]) * 1000 + len(m["name"]))
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))
PY
check "translate --source-profile envoy" "$BIN/milometer" translate -m "$M" -t prometheus-rules \
	--source-profile envoy --strict -o "$T/rules.yml"
check "promtool check rules" promtool check rules "$T/rules.yml"
python3 - "$TR_DIR/testdata/envoy-stats.prom" "$M/routes.yaml" "$T/test.yml" <<'PY'
import math, re, sys, yaml
lines = [l for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")]
uids = {(d["metadata"]["namespace"], d["metadata"]["name"]): d["metadata"]["uid"]
        for d in yaml.safe_load_all(open(sys.argv[2]))}
pat = re.compile(r'(\w+)\{(.*)\} (\S+)$')
def labels(s):
    return dict(re.findall(r'(\w+)="([^"]*)"', s))
def om(x):  # the shortest round trip, OpenMetrics style ("1.0")
    r = repr(x)
    return r
def fmt(name, lab):
    return name + "{" + ",".join('%s="%s"' % kv for kv in sorted(lab.items())) + "}"
inputs, exp = [], {}
fam = "gateway_networking_k8s_io_httproute_delivery_upstream_request_"
for l in lines:
    name, lab, val = pat.match(l.strip()).groups()
    inputs.append({"series": name + "{" + lab + "}", "values": "%sx10" % val})
    lab = labels(lab)
    m = re.fullmatch(r"httproute/([^/]+)/([^/]+)/rule/[0-9]+", lab["envoy_cluster_name"])
    if not m or (m.group(1), m.group(2)) not in uids:
        continue
    t = {"resource_name": m.group(2), "resource_namespace": m.group(1),
         "resource_uid": uids[(m.group(1), m.group(2))],
         "upstream_cluster": lab["envoy_cluster_name"]}
    v = float(val)
    if name == "envoy_cluster_upstream_rq_total":
        exp.setdefault(fam + "count_total", []).append((fmt(fam + "count_total", t), v))
    elif name.endswith("_bucket"):
        le = lab["le"]
        t["le"] = le if le == "+Inf" else om(float(le) * (1 / 1000.0))
        exp.setdefault(fam + "latency_seconds_bucket", []).append(
            (fmt(fam + "latency_seconds_bucket", t), v))
    elif name.endswith("_sum"):
        s = (1 / 1000.0) * v
        inv = 1.0 / 0.000001
        exp.setdefault("round(%slatency_seconds_sum, 0.000001)" % fam, []).append(
            (fmt("", t), math.floor(s * inv + 0.5) / inv))
    elif name.endswith("_count"):
        exp.setdefault(fam + "latency_seconds_count", []).append(
            (fmt(fam + "latency_seconds_count", t), v))
tests = [{"expr": e, "eval_time": "5m",
          "exp_samples": [{"labels": l, "value": v} for l, v in s]} for e, s in exp.items()]
yaml.safe_dump({"rule_files": ["rules.yml"], "evaluation_interval": "1m",
                "tests": [{"interval": "1m", "input_series": inputs, "promql_expr_test": tests}]},
               open(sys.argv[3], "w"), width=1000)
print(sum(len(s) for s in exp.values()), "expected series")
PY
check "fixture gives 4 families of expected series" test "$(grep -c 'expr:' "$T/test.yml")" -eq 4
check "promtool test rules: envoy fixture == expected by construction" promtool test rules "$T/test.yml"
sed 's/"le", "t:0.5", "le", "500"/"le", "t:0.5", "le", "500\\\\.0"/' "$T/rules.yml" >"$T/bad.yml"
cmp -s "$T/bad.yml" "$T/rules.yml" && bad "mutation did not apply"
sed 's/rules.yml/bad.yml/' "$T/test.yml" >"$T/test-bad.yml"
refute "promtool rejects le matched in OpenMetrics form (Envoy prints \"500\")" promtool test rules "$T/test-bad.yml"
# Envoy's downstream stats carry no route: refused, with the reason
cp "$TR_DIR/testdata/filtered.yaml" "$M/"
"$BIN/milometer" translate -m "$M" -t prometheus-rules --source-profile envoy -o "$T/r3.yml" 2>"$T/report.txt"
check "downstream source refused for envoy" grep -q '^t-filtered-policy: prometheus-rules: NotTranslatable: Envoy.s downstream stats' "$T/report.txt"
finish
