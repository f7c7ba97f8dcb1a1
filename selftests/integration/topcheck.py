#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Check `milometer top --once -o json` against outside ground truth.

  topcheck.py counts --top FILE --log NGINX_LOG
      per HTTPRoute rule and leg, requests and successes (not 5xx, not
      aborted) equal the access log's
  topcheck.py quantiles --top FILE --prom URL
      p50/p95/p99 equal a real Prometheus' histogram_quantile() over the
      same buckets, summed by route and rule
  topcheck.py dom --dom FILE --out FILE
      the rows of the /ui page's table (as headless Chromium rendered it)
      as top's JSON, for `counts`
  topcheck.py same --top FILE --other FILE
      two views (local agent, Prometheus) give the same rows and figures
"""
import argparse
import collections
import json
import math
import re
import sys
import urllib.parse
import urllib.request

import mmcheck

LEGS = {"downstream": "envoy_http_downstream_rq_time_bucket",
        "upstream": "envoy_cluster_upstream_rq_time_bucket"}


def key(row):
    route = row["route"]
    if row["namespace"]:
        route = "%s/%s" % (row["namespace"], route)
    return route, row["rule"], row["leg"]


def load(path):
    with open(path) as f:
        return {key(r): r for r in json.load(f)}


def cmd_counts(a):
    rows = load(a.top)
    want_n, want_ok = collections.Counter(), collections.Counter()
    for r in mmcheck.read_log(a.log, "nginx"):
        if r.route == "-":
            continue
        for leg, cls in (("downstream", r.cls), ("upstream", r.up_cls)):
            if cls is None:
                continue
            k = (r.route, r.rule, leg)
            want_n[k] += 1
            want_ok[k] += cls not in ("5xx", "aborted")
    bad = checked = 0
    for k in sorted(set(want_n) | set(rows), key=str):
        row = rows.get(k)
        n = row["requests"] if row else 0
        if row and n and row["success_rate"] is None:
            ok = want_ok[k]  # no success figure to compare
        else:
            ok = round(row["success_rate"] * n) if row and n else 0
            checked += 1
        mark = ""
        if n != want_n[k] or ok != want_ok[k]:
            mark = "   <-- differs"
            bad += 1
        print("  %-36s log %6d ok %6d   top %6d ok %6d%s" %
              ("%s rule %s %s" % k, want_n[k], want_ok[k], n, ok, mark))
    print("%d rows, %d success rates compared" % (len(want_n), checked))
    print("top matches the access log" if not bad else "MISMATCH")
    return 1 if bad or not want_n or not checked else 0


def promql(base, q):
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
    with urllib.request.urlopen(url, timeout=5) as r:
        d = json.load(r)
    assert d.get("status") == "success", d
    return d["data"]["result"]


def same(x, y):
    if x is None or y is None or (isinstance(x, float) and math.isnan(x)) \
            or (isinstance(y, float) and math.isnan(y)):
        return (x is None or math.isnan(x)) and (y is None or math.isnan(y))
    return abs(x - y) <= 1e-9 * max(1.0, abs(x), abs(y))


def cmd_quantiles(a):
    rows = load(a.top)
    bad = checked = 0
    for leg, metric in LEGS.items():
        for q in ("0.5", "0.95", "0.99"):
            expr = ("histogram_quantile(%s, sum by (le, k8s_namespace_name, "
                    "k8s_httproute_name, envoy_cluster_name) (%s))" % (q, metric))
            got = {}
            for res in promql(a.prom, expr):
                m = res["metric"]
                row = {"namespace": m.get("k8s_namespace_name", ""),
                       "route": m.get("k8s_httproute_name", ""),
                       "rule": None, "leg": leg}
                cl = m.get("envoy_cluster_name", "")
                if "/rule/" in cl:
                    row["rule"] = int(cl.rsplit("/", 1)[1])
                got[key(row)] = float(res["value"][1])
            field = "p%d_ms" % round(float(q) * 100)
            for k, row in rows.items():
                if k[2] != leg:
                    continue
                want = got.get(k, float("nan"))
                checked += 1
                ok = same(row[field], want)
                bad += not ok
                print("  %-36s %s top %-12s prometheus %-12s%s" %
                      ("%s rule %s %s" % k, field, row[field], want,
                       "" if ok else "   <-- differs"))
    print("%d percentiles compared" % checked)
    print("top's percentiles equal histogram_quantile()" if not bad else "MISMATCH")
    return 1 if bad or not checked else 0


def cmd_same(a):
    x, y = load(a.top), load(a.other)
    bad = 0
    for k in sorted(set(x) | set(y), key=str):
        rx, ry = x.get(k), y.get(k)
        for f in ("requests", "success_rate", "p50_ms", "p95_ms", "p99_ms"):
            vx = rx[f] if rx else None
            vy = ry[f] if ry else None
            if not same(vx, vy):
                bad += 1
                print("  %-36s %s: %s vs %s   <-- differs" %
                      ("%s rule %s %s" % k, f, vx, vy))
    print("%d rows, the two views agree" % len(x) if not bad else "MISMATCH")
    return 1 if bad or not x else 0


def cmd_dom(a):
    rows = []
    with open(a.dom) as f:
        html = f.read()
    if 'data-loaded="1"' not in html:
        print("the page never loaded its data")
        return 1
    for m in re.finditer(r'<tr data-key="([^"]*)" data-requests="([^"]*)"'
                         r' data-window-requests="([^"]*)"'
                         r' data-success="([^"]*)"', html):
        name, rule, leg = m.group(1).split("|")
        ns, _, route = name.rpartition("/")
        n, wn = int(m.group(2)), int(m.group(3))
        rows.append({"namespace": ns, "route": route,
                     "rule": None if rule == "-" else int(rule), "leg": leg,
                     "requests": n,
                     # the page's success covers its window: comparable with
                     # the whole log only when the window holds every request
                     "success_rate": float(m.group(4)) if m.group(4) and
                     wn == n else None})
    with open(a.out, "w") as f:
        json.dump(rows, f)
    print("%d rows in the page's table" % len(rows))
    return 0 if rows else 1


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("counts")
    c.add_argument("--top", required=True)
    c.add_argument("--log", required=True)
    q = sub.add_parser("quantiles")
    q.add_argument("--top", required=True)
    q.add_argument("--prom", required=True)
    s = sub.add_parser("same")
    s.add_argument("--top", required=True)
    s.add_argument("--other", required=True)
    d = sub.add_parser("dom")
    d.add_argument("--dom", required=True)
    d.add_argument("--out", required=True)
    a = p.parse_args()
    return {"counts": cmd_counts, "quantiles": cmd_quantiles,
            "same": cmd_same, "dom": cmd_dom}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
