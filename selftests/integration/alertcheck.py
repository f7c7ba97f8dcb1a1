#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The alerts a real Prometheus fires against what the access log says.

  alertcheck.py --prom URL --log FILE --error-ratio R --latency-s S
               [--quantile Q] [--timeout SECS]

From the proxy's access log (the ground truth): per route, the share of
upstream 5xx responses and the Q-quantile of the upstream response time.
A route must fire HTTPRouteErrorRate when its share is above R and
HTTPRouteLatency when its quantile is above S, and must not otherwise; a
route within a factor 2 of a threshold makes the test ambiguous and fails
it (the traffic is built far from the thresholds). Polls Prometheus'
/api/v1/alerts until the firing set equals the expected one, then checks
it again after two more rule evaluations (nothing extra fires later).
"""
import argparse
import json
import sys
import time
import urllib.request

import mmcheck


def get(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)["data"]


def firing(prom):
    out = set()
    for a in get(prom + "/api/v1/alerts")["alerts"]:
        if a["state"] != "firing":
            continue
        lb = a["labels"]
        out.add((lb["alertname"], lb["resource_namespace"],
                 lb["resource_name"], lb.get("severity")))
    return out


def last_eval(prom):
    t = []
    for g in get(prom + "/api/v1/rules")["groups"]:
        t.append(g.get("lastEvaluation", ""))
    return min(t) if t else ""


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--prom", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--error-ratio", type=float, required=True)
    p.add_argument("--latency-s", type=float, required=True)
    p.add_argument("--quantile", type=float, default=0.99)
    p.add_argument("--severity", default="warning")
    p.add_argument("--timeout", type=float, default=60)
    a = p.parse_args()
    per = {}
    for r in mmcheck.read_log(a.log, "nginx"):
        if "/" not in r.route or r.up_cls is None:
            continue
        per.setdefault(r.route, []).append(r)
    want = set()
    for route, recs in sorted(per.items()):
        ns, name = route.split("/")
        ratio = sum(r.up_cls == "5xx" for r in recs) / len(recs)
        lat = quantile([r.up_ms / 1000.0 for r in recs if r.up_ms is not None],
                       a.quantile)
        print("log: %s: %d requests, 5xx %.3f, p%g %.4fs" %
              (route, len(recs), ratio, a.quantile * 100, lat))
        for name_, v, th in (("HTTPRouteErrorRate", ratio, a.error_ratio),
                             ("HTTPRouteLatency", lat, a.latency_s)):
            if th / 2 <= v <= th * 2:
                print("ambiguous: %s %s %g near threshold %g" %
                      (route, name_, v, th))
                return 1
            if v > th:
                want.add((name_, ns, name, a.severity))
    if not want:
        print("no route is meant to fire: the traffic did not fail")
        return 1
    deadline = time.time() + a.timeout
    got = None
    while time.time() < deadline:
        got = firing(a.prom)
        if got == want:
            break
        time.sleep(0.5)
    else:
        print("want %s\ngot  %s" % (sorted(want), sorted(got or ())))
        return 1
    # two more evaluations: nothing else fires, nothing stops
    t0 = time.time()
    ev = last_eval(a.prom)
    n = 0
    while time.time() < t0 + 30 and n < 2:
        e = last_eval(a.prom)
        if e != ev:
            ev, n = e, n + 1
        time.sleep(0.2)
    got = firing(a.prom)
    if got != want or n < 2:
        print("after %d evaluations: want %s\ngot  %s" %
              (n, sorted(want), sorted(got)))
        return 1
    for x in sorted(want):
        print("firing: %s %s/%s severity=%s" % x)
    return 0


if __name__ == "__main__":
    sys.exit(main())
