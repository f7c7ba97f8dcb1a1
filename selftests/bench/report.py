#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Prints `make bench`'s figures from what run.sh collected: each data-path
round, medians, where the BPF time goes, the aggregation/export/memory
figures, and a summary with each target and PASS/MISS."""
import argparse
import json
import re
import statistics

UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def ms(text):
    m = re.match(r"([\d.]+)(us|ms|s)$", text)
    return float(m.group(1)) * UNITS[m.group(2)] if m else None


def parse_wrk(path):
    out = {"rps": None, "p50": None, "p99": None, "requests": None,
           "errors": 0, "non2xx": 0}
    with open(path) as f:
        for line in f:
            s = line.split()
            if line.startswith("Requests/sec:"):
                out["rps"] = float(s[1])
            elif len(s) == 2 and s[0] in ("50%", "99%"):
                out["p" + s[0][:-1]] = ms(s[1])
            elif "requests in" in line:
                out["requests"] = int(s[0])
            elif line.strip().startswith("Socket errors:"):
                out["errors"] = sum(int(x) for x in
                                    re.findall(r"\w+ (\d+)", line))
            elif line.strip().startswith("Non-2xx"):
                out["non2xx"] = int(s[-1])
    return out


def load(path):
    with open(path) as f:
        return json.load(f)


def bpf_delta(r):
    a, b = load(r["bpf0"]), load(r["bpf1"])
    return {k: (v[0] - a.get(k, [0, 0])[0], v[1] - a.get(k, [0, 0])[1])
            for k, v in b.items()}


def figures(path):
    out, lines = {}, []
    try:
        with open(path) as f:
            for line in f:
                m = re.match(r"figure (\S+) (\S+)$", line.strip())
                if m:
                    out[m.group(1)] = float(m.group(2))
                else:
                    lines.append(line.rstrip())
    except OSError:
        pass
    return out, lines


def main():
    ap = argparse.ArgumentParser()
    for a in ("rounds", "aggregate", "export", "memory"):
        ap.add_argument("--" + a, required=True)
    args = ap.parse_args()

    rounds = []
    with open(args.rounds) as f:
        for line in f:
            r = dict(kv.split("=", 1) for kv in line.split())
            r.update(parse_wrk(r["wrk"]))
            r["served"] = int(r["requests"])
            rounds.append(r)

    print("\n== 1. data path: gateway nginx + backend under wrk, agent off/on")
    print("%-5s %-4s %11s %9s %9s %10s %8s %10s %8s %9s" %
          ("round", "mode", "req/s", "p50 ms", "p99 ms", "served",
           "errors", "BPF ns/rq", "CPU s", "RSS MiB"))
    progs = {}
    for r in rounds:
        extra = ("%10s %8s %9s" % ("", "", ""))
        if r["mode"] != "off":
            d = bpf_delta(r)
            tot = sum(t for t, _ in d.values())
            r["bpf_ns_rq"] = tot / max(r["served"], 1)
            r["cpu_s"] = float(r["cpu_s"])
            r["rss_mib"] = int(r["rss_kb"]) / 1024
            r["hwm_mib"] = int(r["hwm_kb"]) / 1024
            for k, (t, c) in d.items():
                if r["mode"] != "on":
                    continue
                p = progs.setdefault(k, [0, 0])
                p[0] += t
                p[1] += c
            extra = "%10.0f %8.2f %9.1f" % (r["bpf_ns_rq"], r["cpu_s"],
                                            r["rss_mib"])
        print("%-5s %-4s %11.0f %9.2f %9.2f %10d %8d %s" %
              (r["n"], r["mode"], r["rps"], r["p50"], r["p99"],
               r["served"], r["errors"] + r["non2xx"], extra))

    off = [r for r in rounds if r["mode"] == "off"]
    on = [r for r in rounds if r["mode"] == "on"]
    med = statistics.median
    rps_off, rps_on = med(r["rps"] for r in off), med(r["rps"] for r in on)
    p99_off, p99_on = med(r["p99"] for r in off), med(r["p99"] for r in on)
    p50_off, p50_on = med(r["p50"] for r in off), med(r["p50"] for r in on)
    bpf_ns = med(r["bpf_ns_rq"] for r in on)
    cpu_s = med(r["cpu_s"] for r in on)
    served_on = sum(r["served"] for r in on)
    print("medians: off %.0f req/s p50 %.2f ms p99 %.2f ms | on %.0f req/s "
          "p50 %.2f ms p99 %.2f ms" % (rps_off, p50_off, p99_off, rps_on,
                                       p50_on, p99_on))
    print("throughput on/off %.4f, p50 on/off %.3f, p99 on/off %.3f" %
          (rps_on / rps_off, p50_on / p50_off, p99_on / p99_off))
    for r in rounds:
        if r["mode"] != "bytes":
            continue
        extra = int(r["extra_bytes"])
        slope = (r["bpf_ns_rq"] - bpf_ns) / (2 * extra)
        print("round %s: +%d request header bytes, parsed on both legs: "
              "%.0f BPF ns/request -> %.1f ns per parsed byte;\n  at ~%d "
              "head bytes per request (request in and out, response in and "
              "out)\n  parsing is ~%.0f ns of the %.0f ns per request, the "
              "rest is per hook run" %
              (r["n"], extra, r["bpf_ns_rq"], slope, int(r["head_bytes"]),
               slope * int(r["head_bytes"]), bpf_ns))
    print("agent (on rounds, median): %.2f CPU s per round = %.2f us of "
          "agent CPU per request; RSS %.1f MiB (peak %.1f MiB)" %
          (cpu_s, cpu_s * 1e6 / med(r["served"] for r in on),
           med(r["rss_mib"] for r in on), max(r["hwm_mib"] for r in on)))

    print("\nBPF programs over all on rounds (%d requests served; "
          "bpf_stats adds ~its own clock reads to each run):" % served_on)
    print("  %-22s %12s %10s %10s %10s %6s" %
          ("program", "run_time ms", "calls", "calls/rq", "ns/call",
           "ns/rq"))
    total = sum(t for t, _ in progs.values()) or 1
    for k, (t, c) in sorted(progs.items(), key=lambda kv: -kv[1][0])[:12]:
        if not c:
            continue
        print("  %-22s %12.1f %10d %10.2f %10.0f %6.0f" %
              (k, t / 1e6, c, c / served_on, t / c, t / served_on))
    print("  %-22s %12.1f %10d %10.2f %10s %6.0f" %
          ("all programs", total / 1e6, sum(c for _, c in progs.values()),
           sum(c for _, c in progs.values()) / served_on, "",
           total / served_on))
    print("  (calls count the syscalls of every process on the node - wrk,"
          " the backend,\n   anything else: each hook runs, then filters on"
          " the target map)")

    agg, agg_lines = figures(args.aggregate)
    print("\n== 2. user-space aggregation (bin/bench_aggregate)")
    print("\n".join(agg_lines))

    exp, exp_lines = figures(args.export)
    print("\n== 3. export (bin/bench_export; bin/bench_store)")
    print("\n".join(exp_lines))
    mem = {}
    with open(args.memory) as f:
        for line in f:
            s = line.strip()
            if "B/series" not in s:
                continue
            print(s)
            nums = [float(x) for x in
                    re.findall(r"(\d+) (?:B/series|\(mallinfo2\))", s)]
            worst = max(nums) if nums else None
            if s.startswith("counter, 6 shared labels"):
                mem["counter"] = worst
            elif s.startswith("explicit histogram, 14 bounds"):
                mem["explicit"] = worst
            elif s.startswith("exponential histogram, 1 observation"):
                mem["exp1"] = worst
            elif s.startswith("exponential histogram, 1 ms..1 s spread"):
                mem["exp160"] = worst

    rows = []

    def row(name, value, fmt, target=None, higher_better=True):
        if value is None:
            rows.append((name, "n/a", target[1] if target else "", "MISSING"))
            return
        if not target:
            rows.append((name, fmt % value, "", ""))
            return
        limit, text = target
        ok = value >= limit if higher_better else value <= limit
        if ok:
            verdict = "PASS"
        elif higher_better:
            verdict = "MISS by %.1f%%" % ((limit - value) / limit * 100)
        elif value > 2 * limit:
            verdict = "MISS: %.0fx the target" % (value / limit)
        else:
            verdict = "MISS by %.0f%%" % ((value - limit) / limit * 100)
        rows.append((name, fmt % value, text, verdict))

    row("throughput on/off (median req/s)", rps_on / rps_off, "%.4f",
        (0.98, ">= 0.98"))
    row("p99 latency on/off", p99_on / p99_off, "%.3f")
    row("BPF run time per request, all hooks", bpf_ns, "%.0f ns",
        (300, "<= 300 ns"), False)
    row("agent CPU per request", cpu_s * 1e6 / med(r["served"] for r in on),
        "%.2f us")
    row("agent RSS", med(r["rss_mib"] for r in on), "%.1f MiB")
    row("aggregation, one core", agg.get("aggregate_events_per_s"),
        "%.2e ev/s", (5e6, ">= 5 M ev/s"))
    row("aggregation + policy engine, one core",
        agg.get("aggregate_policy_events_per_s"), "%.2e ev/s",
        (5e6, ">= 5 M ev/s"))
    if "otlp_points" in exp:
        row("OTLP encode, %d-point store" % exp["otlp_points"],
            exp.get("otlp_encode_ms"), "%.2f ms")
        row("OTLP request bytes", exp.get("otlp_bytes"), "%.0f B")
        row("OTLP request bytes, gzip", exp.get("otlp_gzip_bytes"),
            "%.0f B")
    row("memory per counter series", mem.get("counter"), "%.0f B",
        (200, "<= 200 B"), False)
    row("memory per explicit histogram series", mem.get("explicit"),
        "%.0f B", (1024, "<= 1 KiB"), False)
    row("memory per exp. histogram series, 1 obs", mem.get("exp1"),
        "%.0f B", (1024, "<= 1 KiB"), False)
    row("memory per exp. histogram, 160 buckets", mem.get("exp160"),
        "%.0f B", (1024, "<= 1 KiB"), False)

    print("\n== summary")
    w = max(len(r[0]) for r in rows)
    print("%-*s  %-16s %-14s %s" % (w, "figure", "measured", "target",
                                    "verdict"))
    for r in rows:
        print("%-*s  %-16s %-14s %s" % (w, *r))


if __name__ == "__main__":
    main()
