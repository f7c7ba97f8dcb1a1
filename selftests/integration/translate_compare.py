#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Compare, through a Prometheus-compatible query API, the series recorded
by translated rules (job SRC, computed from the agent's source series) with
the agent's own target series (job REF): for every recorded family the same
label sets in both directions and the same values (_sum within a relative
1e-9: the agent sums a*v per request, a rule a*sum(v)).

  translate_compare.py --url URL --rules RULES.yml [--src-job src] [--ref-job ref]
  translate_compare.py --url URL --family NAME... (relabelled series: the
                       families the metric_relabel_configs produce)
Exit 0 when equal (and non-empty), 1 with the differences printed.
"""
import argparse
import json
import sys
import urllib.parse
import urllib.request

import yaml


def query(url, q):
    u = url + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
    with urllib.request.urlopen(u, timeout=10) as r:
        d = json.load(r)
    if d.get("status") != "success":
        raise RuntimeError("%s: %s" % (q, d))
    return d["data"]["result"]


def families(path):
    d = yaml.safe_load(open(path))
    groups = d["spec"]["groups"] if "spec" in d else d["groups"]
    return [r["record"] for g in groups for r in g["rules"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--rules")
    ap.add_argument("--family", action="append", default=[])
    ap.add_argument("--src-job", default="src")
    ap.add_argument("--ref-job", default="ref")
    a = ap.parse_args()
    bad = []
    for f in a.family or families(a.rules):
        src = '%s{job="%s"}' % (f, a.src_job)
        ref = '%s{job="%s"}' % (f, a.ref_job)
        n = query(a.url, "count(%s)" % ref)
        if not n or float(n[0]["value"][1]) == 0:
            bad.append("%s: the agent exposes no series" % f)
            continue
        for what, q in (
                ("translated, not in the agent's", "%s unless ignoring(job) %s" % (src, ref)),
                ("the agent's, not translated", "%s unless ignoring(job) %s" % (ref, src))):
            r = query(a.url, q)
            if r:
                bad.append("%s: %d series %s, e.g. %s" % (f, len(r), what, r[0]["metric"]))
        if f.endswith("_sum"):
            q = "abs(%s - ignoring(job) %s) > ignoring(job) (1e-9 * abs(%s))" % (src, ref, ref)
        else:
            q = "%s != ignoring(job) %s" % (src, ref)
        r = query(a.url, q)
        if r:
            m = r[0]["metric"]
            bad.append("%s: %d values differ, e.g. %s" % (f, len(r), m))
        print("%s: %s series" % (f, n[0]["value"][1]))
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
