#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Compare OTLP metric points: the latest point of every series of the given
metrics in a set of request bodies (A: e.g. what a Collector exported)
against a reference body (B: what milometer's engine exports): same series
(name, attributes) both ways, same kind, temporality, monotonicity, unit,
same values, bucket counts and bounds; sums, min and max within a relative
1e-9 (the engine adds a*v per request, a Collector scales a sum). A
histogram min/max absent from A is counted, not failed: a Collector's
cumulativetodelta cannot derive a delta's min and max from cumulative points.

  otlpdiff.py --names M1,M2 --ref B.pb A1.pb [A2.pb...]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import otlpcheck  # noqa: E402


def points(paths, names, sum_deltas=False):
    out = {}
    for path in paths:
        for m in otlpcheck.metrics(otlpcheck.parse(otlpcheck.decode(path))):
            name = m["name"][0]
            if name not in names:
                continue
            k = otlpcheck.kind(m)
            body = m[k][0]
            meta = (k, body.get("aggregation_temporality", [""])[0],
                    body.get("is_monotonic", ["false"])[0], m.get("unit", [""])[0])
            for p in body.get("data_points", []):
                key = (name, tuple(sorted(otlpcheck.attrs(p).items())))
                t = int(p.get("time_unix_nano", ["0"])[0])
                delta = meta[1] == "AGGREGATION_TEMPORALITY_DELTA"
                if key in out and out[key][0] > t and not (sum_deltas and delta):
                    continue
                if k == "histogram":
                    val = {"count": int(p.get("count", ["0"])[0]),
                           "sum": float(p.get("sum", ["0"])[0]),
                           "min": float(p["min"][0]) if "min" in p else None,
                           "max": float(p["max"][0]) if "max" in p else None,
                           "buckets": [int(x) for x in p.get("bucket_counts", [])],
                           "bounds": [float(x) for x in p.get("explicit_bounds", [])]}
                else:
                    val = {"value": float(p.get("as_double", p.get("as_int", ["0"]))[0])}
                if sum_deltas and delta and key in out:
                    old = out[key][2]
                    for f in ("count", "sum", "value"):
                        if f in val:
                            val[f] += old[f]
                    if "buckets" in val and len(val["buckets"]) == len(old["buckets"]):
                        val["buckets"] = [a + b for a, b in zip(val["buckets"], old["buckets"])]
                    val["min"] = val["max"] = None
                    t = max(t, out[key][0])
                out[key] = (t, meta, val)
    return out


def close(x, y):
    return x == y or abs(x - y) <= 1e-9 * max(abs(x), abs(y))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--names", required=True)
    ap.add_argument("--ref")
    ap.add_argument("--min", type=int, default=1)
    ap.add_argument("--ref-dir", help="reference: every body in DIR (not --ref)")
    ap.add_argument("--sum-deltas", action="store_true",
                    help="delta points: compare the sums over all bodies")
    ap.add_argument("got", nargs="+")
    a = ap.parse_args()
    names = set(a.names.split(","))
    got = points(a.got, names, a.sum_deltas)
    refs = ([os.path.join(a.ref_dir, f) for f in sorted(os.listdir(a.ref_dir))
             if f.endswith(".pb")]
            if a.ref_dir else [a.ref])
    ref = points(refs, names, a.sum_deltas)
    bad = []
    nominmax = 0
    for key in sorted(set(got) | set(ref)):
        if key not in ref:
            bad.append("only translated: %s" % (key,))
            continue
        if key not in got:
            bad.append("only the engine's: %s" % (key,))
            continue
        (_, gm, gv), (_, rm, rv) = got[key], ref[key]
        if gm != rm:
            bad.append("%s: kind/temporality/monotonic/unit %s vs %s" % (key, gm, rm))
        for f in rv:
            if f in ("min", "max") and (gv[f] is None or rv[f] is None):
                # cumulativetodelta cannot carry min/max into a delta
                nominmax += 1
                continue
            if f in ("sum", "min", "max", "value") and None not in (gv[f], rv[f]):
                same = close(gv[f], rv[f])
            else:
                same = gv[f] == rv[f]
            if not same:
                bad.append("%s: %s %s vs %s" % (key, f, gv[f], rv[f]))
    for b in bad[:20]:
        print(b)
    print("%d series compared, %d differences%s" % (
        len(ref), len(bad),
        ", %d min/max the translation does not carry" % nominmax if nominmax else ""))
    return 1 if bad or len(ref) < a.min else 0


if __name__ == "__main__":
    sys.exit(main())
