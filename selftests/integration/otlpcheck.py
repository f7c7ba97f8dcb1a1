#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Decode OTLP request bodies stored by bin/otlp_sink with protoc (the
repository's exporter/otlp_metrics.proto) and check what they carry.

  otlpcheck.py points DIR/req-NNNNNN.pb METRIC [ATTR=VALUE]...
      sum of the matching Sum points (or Histogram counts) in that body
  otlpcheck.py summary FILE.pb
      metric names, units, kinds and point counts
"""
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MSG = "opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest"


def decode(path):
    with open(path, "rb") as f:
        out = subprocess.run(
            ["protoc", "--decode=" + MSG,
             "--proto_path=" + os.path.join(ROOT, "exporter"),
             os.path.join(ROOT, "exporter", "otlp_metrics.proto")],
            stdin=f, capture_output=True, check=True)
    return out.stdout.decode()


def parse(text):
    """protoc text format -> nested dict of lists."""
    root = {}
    stack = [root]
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            stack.pop()
        elif line.endswith("{"):
            node = {}
            stack[-1].setdefault(line[:-1].strip(), []).append(node)
            stack.append(node)
        else:
            k, v = line.split(":", 1)
            v = v.strip()
            if v.startswith('"'):
                v = v[1:-1].encode().decode("unicode_escape")
            stack[-1].setdefault(k.strip(), []).append(v)
    return root


def metrics(tree):
    for rm in tree.get("resource_metrics", []):
        for sm in rm.get("scope_metrics", []):
            for m in sm.get("metrics", []):
                yield m


def attrs(point):
    out = {}
    for kv in point.get("attributes", []):
        val = kv.get("value", [{}])[0]
        for k in ("string_value", "int_value", "double_value", "bool_value"):
            if k in val:
                out[kv["key"][0]] = val[k][0]
    return out


def kind(m):
    for k in ("sum", "gauge", "histogram", "exponential_histogram"):
        if k in m:
            return k
    return "?"


def cmd_points(path, name, match):
    total = 0.0
    for m in metrics(parse(decode(path))):
        if m["name"][0] != name:
            continue
        k = kind(m)
        for p in m[k][0].get("data_points", []):
            a = attrs(p)
            if not all(a.get(x) == y for x, y in match.items()):
                continue
            if k in ("histogram", "exponential_histogram"):
                total += float(p.get("count", ["0"])[0])
            else:
                total += float(p.get("as_int", p.get("as_double", ["0"]))[0])
    print(int(total) if total.is_integer() else repr(total))


def cmd_summary(path):
    for m in metrics(parse(decode(path))):
        k = kind(m)
        pts = m[k][0].get("data_points", [])
        extra = ""
        if k == "sum":
            extra = " monotonic=%s temporality=%s" % (
                m[k][0].get("is_monotonic", ["false"])[0],
                m[k][0].get("aggregation_temporality", ["?"])[0])
        print("%s unit=%s %s points=%d%s" % (
            m["name"][0], m.get("unit", [""])[0], k, len(pts), extra))


def main():
    if sys.argv[1] == "points":
        cmd_points(sys.argv[2], sys.argv[3],
                   dict(a.split("=", 1) for a in sys.argv[4:]))
    elif sys.argv[1] == "summary":
        cmd_summary(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
