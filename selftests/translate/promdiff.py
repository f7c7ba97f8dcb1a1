#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Compare the series of two Prometheus /metrics endpoints for a list of
metric names: same label sets both ways, same values.

  promdiff.py --a URL --b URL --names N1,N2 [--drop-labels REGEX] [--min N]
Exit 0 when equal and at least --min series compared, else 1 with the
differences.
"""
import argparse
import re
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def series(url, names, drop):
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name not in names:
                continue
            lab = tuple(sorted((k, v) for k, v in s.labels.items()
                               if not (drop and re.fullmatch(drop, k))))
            out[(s.name, lab)] = s.value
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    ap.add_argument("--names", required=True)
    ap.add_argument("--drop-labels", default="")
    ap.add_argument("--min", type=int, default=1)
    a = ap.parse_args()
    names = set(a.names.split(","))
    x = series(a.a, names, a.drop_labels)
    y = series(a.b, names, a.drop_labels)
    bad = 0
    for k in sorted(set(x) | set(y)):
        if k not in y:
            print("only in a:", k, x[k])
            bad += 1
        elif k not in x:
            print("only in b:", k, y[k])
            bad += 1
        elif x[k] != y[k]:
            print("differs:", k, x[k], "vs", y[k])
            bad += 1
    print("%d series compared, %d differences" % (len(x), bad))
    return 1 if bad or len(x) < a.min else 0


if __name__ == "__main__":
    sys.exit(main())
