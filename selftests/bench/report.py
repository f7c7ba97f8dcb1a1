#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Prints `make bench`'s figures from what run.sh collected: every round,
the gateway pairs (nginx, haproxy, both capture modes), where the BPF time
goes, the node tax, the scale rows, kernel memory per connection, a cost
model, the aggregation/export/memory figures, and a summary with each
target and a verdict (pass / MISS).

A figure that could not be measured prints as n/a with verdict MISSING,
or "not measured" with the phase it needs when BENCH_PHASES left that
phase out; the report itself never fails on the figures."""
import argparse
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fingerprint  # noqa: E402
import peers  # noqa: E402

UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}
IO_PROGS = ("mm_sock_recv", "mm_sock_send", "mm_sys_exit")
med = statistics.median
NCPU = os.cpu_count() or 1


def ms(text):
    m = re.match(r"([\d.]+)(us|ms|s)$", text)
    return float(m.group(1)) * UNITS[m.group(2)] if m else None


def parse_wrk(path):
    out = {"rps": None, "p50": None, "p99": None, "errors": 0, "non2xx": 0,
           "error_kinds": ""}
    try:
        with open(path) as f:
            for line in f:
                s = line.split()
                if line.startswith("Requests/sec:"):
                    out["rps"] = float(s[1])
                elif len(s) == 2 and s[0] in ("50%", "99%"):
                    out["p" + s[0][:-1]] = ms(s[1])
                elif line.strip().startswith("Socket errors:"):
                    kinds = re.findall(r"(\w+) (\d+)", line)
                    out["errors"] = sum(int(n) for _, n in kinds)
                    # which kind (connect, read, write, timeout) says
                    # where to look: resets are read errors
                    out["error_kinds"] = ", ".join(
                        "%s %s" % (k, n) for k, n in kinds if n != "0")
                elif line.strip().startswith("Non-2xx"):
                    out["non2xx"] = int(s[-1])
                elif line.startswith("finished in"):
                    # h2load: "finished in 5.00s, 12345.60 req/s, 1MB/s"
                    out["rps"] = float(s[3])
                elif line.startswith("requests:") and "failed" in line:
                    # h2load: "requests: N total, N started, N done,
                    # N succeeded, N failed, N errored, N timeout"
                    out["errors"] = int(s[9]) + int(s[11])
    except OSError:
        pass
    return out


def parse_latency(path):
    """h2load --log-file: start (us since the epoch), status, latency (us)
    per request. p50/p99 over every request of the round (h2load prints
    no percentiles)"""
    lat, bad = [], 0
    try:
        with open(path) as f:
            for line in f:
                s = line.split()
                if len(s) >= 3:
                    lat.append(int(s[2]))
                    bad += not s[1].startswith("2")
    except OSError:
        return {}
    if not lat:
        return {}
    lat.sort()
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] / 1e3
    return {"p50": pick(0.50), "p99": pick(0.99), "non2xx": bad}


def tool_output(path):
    """a tool's output, "" when it did not run"""
    try:
        with open(path) as f:
            return f.read().rstrip()
    except OSError:
        return ""


def load(path):
    with open(path) as f:
        return json.load(f)


def kv_lines(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                if line.strip():
                    out.append(dict(kv.split("=", 1) for kv in line.split()
                                    if "=" in kv))
    except OSError:
        pass
    return out


def bpf_delta(r):
    a, b = load(r["bpf0"]), load(r["bpf1"])
    return {k: (v[0] - a.get(k, [0, 0])[0], v[1] - a.get(k, [0, 0])[1])
            for k, v in b.items()}


def perf_counts(path):
    """perf stat -x, output: {event: count}"""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                s = line.strip().split(",")
                if len(s) > 2 and s[0].isdigit():
                    out[s[2]] = int(s[0])
    except OSError:
        pass
    return out


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


def safe_med(vals):
    vals = [v for v in vals if v is not None]
    return med(vals) if vals else None


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(f, v):
    return "n/a" if v is None else f % v


class Summary:
    def __init__(self, phases=None):
        self.rows = []
        # the phases run (BENCH_PHASES), None when not known
        self.phases = phases

    def add(self, name, value, f, must=None, aim=None, higher=True,
            verdict=None, note="", phase=None):
        """must/aim: (limit, text). verdict overrides the comparison.
        phase: the phase that measures the row (a row of a phase left out
        is "not measured" with that phase named, not MISSING)."""
        text = must[1] if must else "printed"
        if aim:
            text += " (aim %s)" % aim[1]
        if value is None and phase and self.phases is not None and \
                phase not in self.phases:
            v = peers.phase_left_out(phase, self.phases)
            if phase in "AB":
                v += " (phase P's rows replace it)"
            note = ""
        elif value is None:
            v = "MISSING"
        elif verdict is not None:
            v = verdict
        elif not must:
            v = "printed"
            if aim:
                v += ", aim met" if (value >= aim[0] if higher else
                                     value <= aim[0]) else ", aim not met"
        else:
            ok = value >= must[0] if higher else value <= must[0]
            v = "pass" if ok else "MISS"
            if ok and aim and (value >= aim[0] if higher else
                               value <= aim[0]):
                v = "pass, aim met"
        self.rows.append((name, fmt(f, value), text, v + note))

    def print(self):
        w = max(len(r[0]) for r in self.rows)
        m = max(len(r[1]) for r in self.rows)
        t = max(len(r[2]) for r in self.rows)
        print("%-*s  %-*s  %-*s  %s" % (w, "figure", m, "measured", t,
                                        "target", "verdict"))
        for r in self.rows:
            print("%-*s  %-*s  %-*s  %s" % (w, r[0], m, r[1], t, r[2], r[3]))


def main():
    ap = argparse.ArgumentParser()
    for a in ("rounds", "nodetax", "kmem", "conn-size", "notes",
              "aggregate", "export", "memory", "bpf-cost", "uprobe", "cel"):
        ap.add_argument("--" + a, required=True)
    # the hardware fingerprint (fingerprint.py), the results JSON written
    # with it, and a previous run's JSON to compare with (same fingerprint)
    ap.add_argument("--fingerprint")
    ap.add_argument("--results-out")
    ap.add_argument("--compare")
    ap.add_argument("--peers")
    args = ap.parse_args()
    fp = {}
    if args.fingerprint:
        with open(args.fingerprint) as f:
            fp = json.load(f)
    prev = None
    if args.compare:
        with open(args.compare) as f:
            prev = json.load(f)
        d = fingerprint.diff(prev.get("fingerprint", {}), fp)
        if d:
            sys.stderr.write(
                "bench: refusing to compare with %s: it was measured on other "
                "hardware (a floor does not carry over):\n  %s\n" %
                (args.compare, "\n  ".join(d)))
            sys.exit(1)
    results = {"fingerprint": fp}
    if fp:
        print("\n== hardware fingerprint")
        for k, v in fp.items():
            print("   %s: %s" % (k, v))
    notes = {}
    for d in kv_lines(args.notes):
        notes.update(d)

    rounds = kv_lines(args.rounds)
    for r in rounds:
        r.update(parse_wrk(r["wrk"]))
        if "lat" in r:
            r.update(parse_latency(r["lat"]))
        r["served"] = int(r["requests"])
        r["conns"] = int(r["conns"])
        r["perf"] = perf_counts(r.get("perf", ""))
        if "window_s" in r:
            # bpf_stats rounds: requests over the measuring window (wrk's
            # own figures include its connection ramp-up)
            r["rps"] = r["served"] / float(r["window_s"])
        if "bpf0" in r:
            r["bpf"] = bpf_delta(r)
            r["bpf_ns_rq"] = (sum(t for t, _ in r["bpf"].values()) /
                              max(r["served"], 1))
        if "gw_ticks" in r:
            n = max(r["served"], 1) / 1e6
            r["gw_us_rq"] = int(r["gw_ticks"]) / int(r["tck"]) / n
            r["be_us_rq"] = int(r["be_ticks"]) / int(r["tck"]) / n
        if "steal_ticks" in r and int(r.get("wall_ms", 0)) > 0:
            # share of the CPUs' time the hypervisor gave other guests
            r["steal_pct"] = (100.0 * int(r["steal_ticks"]) / int(r["tck"]) /
                              (int(r["wall_ms"]) / 1000.0) / NCPU)
        if "cpu_s" in r:
            r["cpu_us_rq"] = float(r["cpu_s"]) * 1e6 / max(r["served"], 1)
            r["rss_mib"] = int(r["rss_kb"]) / 1024
            r["hwm_mib"] = int(r["hwm_kb"]) / 1024

    def sel(prefix, gw=None, capture=None):
        return [r for r in rounds if r["tag"].startswith(prefix) and
                (gw is None or r["gw"] == gw) and
                (capture is None or r["capture"] == capture)]

    print("\n== rounds")
    print("%-11s %-7s %-11s %5s %6s %6s %10s %8s %8s %9s %7s %9s %8s %7s "
          "%7s" %
          ("round", "gateway", "agent", "stats", "conns", "routes", "req/s",
           "p50 ms", "p99 ms", "served", "errors", "BPF ns/rq", "CPU us/rq",
           "RSS MiB", "steal %"))
    for r in rounds:
        print("%-11s %-7s %-11s %5s %6d %6s %10s %8s %8s %9d %7d %9s %8s %7s "
              "%7s" %
              (r["tag"], r["gw"], r["capture"], r["stats"], r["conns"],
               r["routes"], fmt("%.0f", r["rps"]), fmt("%.2f", r["p50"]),
               fmt("%.2f", r["p99"]), r["served"], r["errors"] + r["non2xx"],
               fmt("%.0f", r.get("bpf_ns_rq")),
               fmt("%.2f", r.get("cpu_us_rq")), fmt("%.1f", r.get("rss_mib")),
               fmt("%.1f", r.get("steal_pct"))))
    print("(bpf_stats rounds: req/s and BPF figures over the measuring window "
          "once all connections are up;\n p50/p99 are wrk's, over its whole "
          "run; steal: CPU time the hypervisor gave other guests\n during the "
          "round, /proc/stat - req/s of rounds with much of it are of a slower "
          "machine)")
    if notes.get("other_agent"):
        print("NOTE: another milometer's BPF programs were loaded during the "
              "run: they ran in every round, off and on")

    S = Summary(notes.get("phases"))
    if args.peers:
        rows_p, results["peers"] = peers.report(args.peers, notes, rounds)
        S.rows.extend(rows_p)

    # --- gateway pairs (bpf_stats off) ------------------------------------
    print("\n== gateway pairs, bpf_stats off (medians of the rounds)")
    pairs = {}
    for label, prefix, gw, cap in (
            ("nginx", "A", "nginx", "auto"),
            ("nginx, --capture sys-exit", "A", "nginx", "sys-exit"),
            ("haproxy", "B", "haproxy", "auto"),
            ("nginx, floor: empty programs", "A", "nginx", "floor-empty"),
            ("nginx, floor: filter + sk state", "A", "nginx", "floor-hook"),
            ("nginx, floor: + first bytes read", "A", "nginx", "floor-read"),
            ("nginx, floor: + prefix copy", "A", "nginx", "floor-copy"),
            ("haproxy, floor: empty programs", "B", "haproxy",
             "floor-empty"),
            ("haproxy, floor: filter + sk state", "B", "haproxy",
             "floor-hook"),
            ("haproxy, floor: + first bytes read", "B", "haproxy",
             "floor-read"),
            ("haproxy, floor: + prefix copy", "B", "haproxy", "floor-copy"),
            ("nginx, fixed rate", "RA", "nginx", "auto"),
            ("haproxy, fixed rate", "RB", "haproxy", "auto"),
            ("nginx, fixed rate, floor: + first bytes read", "RA", "nginx",
             "floor-read"),
            ("haproxy, fixed rate, floor: + first bytes read", "RB",
             "haproxy", "floor-read"),
            ("nginx TLS, TLSCapture off", "T", "nginx-tls", "auto"),
            ("nginx TLS, TLSCapture on", "T", "nginx-tls", "tls"),
            ("nginx TLS+h2 (h2load), gates off", "H", "nginx-h2", "auto"),
            ("nginx TLS+h2 (h2load), TLSCapture+HTTP2 on", "H", "nginx-h2",
             "h2")):
        off, on = sel(prefix, gw, "off"), sel(prefix, gw, cap)
        if not off or not on:
            continue
        p = {k: (safe_med(r[k] for r in off), safe_med(r[k] for r in on))
             for k in ("rps", "p50", "p99")}
        spread = lambda rs: (min(r["rps"] or 0 for r in rs),
                             max(r["rps"] or 0 for r in rs))
        for k in ("gw_us_rq", "be_us_rq"):
            p[k] = (safe_med(r.get(k) for r in off),
                    safe_med(r.get(k) for r in on))
        pairs[label] = p
        print("%-26s off %7s req/s p99 %6s ms | on %7s req/s p99 %6s ms | "
              "throughput on/off %s, p99 on/off %s  (req/s off %.0f..%.0f, "
              "on %.0f..%.0f)" %
              (label, fmt("%.0f", p["rps"][0]), fmt("%.2f", p["p99"][0]),
               fmt("%.0f", p["rps"][1]), fmt("%.2f", p["p99"][1]),
               fmt("%.4f", ratio(p["rps"][1], p["rps"][0])),
               fmt("%.3f", ratio(p["p99"][1], p["p99"][0])),
               *spread(off), *spread(on)))
    print("CPU per request (us, medians; immune to what other tenants take, "
          "unlike req/s):")
    for label, p in pairs.items():
        g, b = p["gw_us_rq"], p["be_us_rq"]
        print("  %-26s gateway off %s on %s: off/on %s | backend off %s on "
              "%s" % (label, fmt("%.2f", g[0]), fmt("%.2f", g[1]),
                      fmt("%.4f", ratio(g[0], g[1])), fmt("%.2f", b[0]),
                      fmt("%.2f", b[1])))
    floor_levels = (("empty", "empty programs"), ("hook", "filter + sk state"),
                    ("read", "+ first bytes read"), ("copy", "+ prefix copy"))

    def floors(gw, key, off_over_on=False):
        """ the same ratio (on/off, or off/on) for this gateway's floors """
        out = []
        for short, lvl in floor_levels:
            f = pairs.get("%s, floor: %s" % (gw, lvl))
            if f:
                off, on = f[key]
                r = ratio(off, on) if off_over_on else ratio(on, off)
                out.append("%s %s" % (short, fmt("%.2f", r)))
        return " (floors: %s)" % ", ".join(out) if out else ""

    if any(", floor: " in k for k in pairs):
        print("floors (bin/bench_floor in the agent's place, same rounds): "
              "empty = both socket tracepoints\n  with programs that return "
              "at once; filter = the agent's tgid bitmap and a 64-byte sk "
              "storage state;\n  read = filter + the first 64 bytes of each "
              "proxy I/O read into per-CPU memory\n  (the least an agent that "
              "parses in the kernel does);\n  copy = filter + up to 256 bytes of each "
              "proxy I/O copied to a ring buffer with a time stamp\n  (what "
              "an agent that parses in user space does in the kernel, its "
              "user-space parsing not run)")
    for label, info in (("nginx", ""), ("haproxy", ""),
                        ("nginx, --capture sys-exit", " (fallback: info)")):
        p = pairs.get(label)
        thr = ratio(p["rps"][1], p["rps"][0]) if p else None
        p99 = ratio(p["p99"][1], p["p99"][0]) if p else None
        fl = "" if info else floors(label, "rps")
        S.add("gateway throughput on/off, %s" % label, thr, "%.4f",
              (0.95, ">= 0.95"), (0.98, ">= 0.98"), note=info + fl,
              phase="A")
        fl = "" if info else floors(label, "p99")
        S.add("p99 latency on/off, %s" % label, p99, "%.3f",
              (1.10, "<= 1.10"), (1.03, "<= 1.03"), higher=False,
              note=info + fl, phase="A")
        g = p["gw_us_rq"] if p else (None, None)
        S.add("gateway CPU per request off/on, %s" % label,
              ratio(g[0], g[1]), "%.4f", (0.95, ">= 0.95"),
              (0.98, ">= 0.98"), note=" (throughput if CPU-bound: info)" +
              ("" if info else floors(label, "gw_us_rq", True)), phase="A")

    # Below saturation the load generator sets the rate, and latency is
    # mostly what the agent adds to each request's path, not the queue its
    # CPU cost builds in front of a saturated gateway (the rows above: a
    # closed loop of 50 connections, whose latency is about 50 / req/s).
    # h2load's connections fire together: a short queue of that many remains.
    for gw in ("nginx", "haproxy"):
        p = pairs.get("%s, fixed rate" % gw)
        rate = [r for r in rounds if r["tag"].startswith("R") and
                r["gw"] == gw]
        note = (" (%s req/s, h2load -c%s: below saturation; the issue's "
                "row is the saturated one above)" %
                (rate[0]["rate"], rate[0]["conns"]) if rate else "")
        for q in ("p50", "p99"):
            S.add("%s latency on/off at a fixed rate, %s" % (q, gw),
                  ratio(p[q][1], p[q][0]) if p else None, "%.3f",
                  (1.10, "<= 1.10"), (1.03, "<= 1.03"), higher=False,
                  note=note + floors("%s, fixed rate" % gw, q), phase="B")

    # TLS capture: uprobes trap into the kernel on every SSL_read/SSL_write
    # (of every process mapping the library, the client's too: wrk here)
    for label in ("nginx TLS, TLSCapture off", "nginx TLS, TLSCapture on",
                  "nginx TLS+h2 (h2load), gates off",
                  "nginx TLS+h2 (h2load), TLSCapture+HTTP2 on"):
        p = pairs.get(label)
        S.add("gateway throughput on/off, %s" % label,
              ratio(p["rps"][1], p["rps"][0]) if p else None, "%.4f",
              note=" (TLS: info)", phase="T")
        if "h2load" in label:
            continue  # h2load prints no percentiles
        S.add("p99 latency on/off, %s" % label,
              ratio(p["p99"][1], p["p99"][0]) if p else None, "%.3f",
              higher=False, note=" (TLS: info)", phase="T")

    # "plain_ns X entry_ns Y entry_ret_ns Z emulated_ns W"
    words = open(args.uprobe).read().split() if _exists(args.uprobe) else []
    up = dict(zip(words[0::2], words[1::2])) if len(words) == 8 else {}
    if up.get("entry_ns"):
        print("\n== one uprobe hit (bin/bench_uprobe): single-stepped %s ns, "
              "+ uretprobe %s ns, on an emulated jump %s ns (plain call %s ns)"
              % (up.get("entry_ns"), up.get("entry_ret_ns"),
                 up.get("emulated_ns"), up.get("plain_ns")))
    for k, label in (("entry_ns", "uprobe hit, single-stepped instruction"),
                     ("emulated_ns", "uprobe hit, emulated jump (TLS capture's)")):
        v = up.get(k)
        S.add(label, float(v) if v else None, "%.0f ns",
              note=" (TLS: info)", phase="T")

    # --- per-program figures (bpf_stats on) -------------------------------
    print("\n== BPF programs, bpf_stats on (it adds ~20 ns of clock reads "
          "to each run)")
    stats = {}
    for tag, label in (("C-nginx", "nginx"), ("C-haproxy", "haproxy"),
                       ("C-sysexit", "nginx, --capture sys-exit"),
                       ("C-bytes", "nginx, +extra header bytes"),
                       ("T-stats", "nginx TLS, TLSCapture on"),
                       ("H-stats", "nginx TLS+h2, TLSCapture+HTTP2 on"),
                       ("C-floor-hook-nginx", "nginx, floor: filter + sk "
                        "state"),
                       ("C-floor-read-nginx", "nginx, floor: + first bytes "
                        "read"),
                       ("C-floor-copy-nginx", "nginx, floor: + prefix copy"),
                       ("C-floor-hook-haproxy", "haproxy, floor: filter + "
                        "sk state"),
                       ("C-floor-read-haproxy", "haproxy, floor: + first "
                        "bytes read"),
                       ("C-floor-copy-haproxy", "haproxy, floor: + prefix "
                        "copy")):
        rs = sel(tag)
        if not rs or "bpf" not in rs[0]:
            continue
        r = rs[0]
        stats[tag] = r
        n = max(r["served"], 1)
        sock_io = sum(v for k, v in r["perf"].items() if k.startswith("sock:"))
        sysx = r["perf"].get("raw_syscalls:sys_exit")
        print("%s: %d requests, %.0f BPF ns per request; the proxy's own "
              "socket I/O %s per request%s (perf)" %
              (label, r["served"], r["bpf_ns_rq"],
               fmt("%.2f", sock_io / n if r["perf"] else None),
               ", syscalls %.2f" % (sysx / n) if sysx else ""))
        print("  %-16s %12s %10s %10s %10s" %
              ("program", "run_time ms", "runs", "ns/run", "runs/rq") +
              " %8s" % "ns/rq")
        for k, (t, c) in sorted(r["bpf"].items(), key=lambda kv: -kv[1][0]):
            if not c:
                continue
            print("  %-16s %12.1f %10d %10.0f %10.2f %8.0f" %
                  (k, t / 1e6, c, t / c, c / n, t / n))
        t_all = sum(t for t, _ in r["bpf"].values())
        c_all = sum(c for _, c in r["bpf"].values())
        print("  %-16s %12.1f %10d %10s %10.2f %8.0f" %
              ("all programs", t_all / 1e6, c_all, "", c_all / n, t_all / n))
    print("  (runs count the socket I/O - or, with sys-exit, the syscalls - "
          "of every process\n   on the node: wrk, the backend, anything "
          "else; each run filters on the target bitmap first)")
    for gw in ("nginx", "haproxy"):
        r = stats.get("C-" + gw)
        fl = ["%s %.0f ns" % (lvl, stats[t]["bpf_ns_rq"])
              for lvl, t in (("hook", "C-floor-hook-" + gw),
                             ("read", "C-floor-read-" + gw),
                             ("copy", "C-floor-copy-" + gw)) if t in stats]
        S.add("BPF ns per proxied request, all programs, %s" % gw,
              r["bpf_ns_rq"] if r else None, "%.0f ns", (1000, "<= 1000 ns"),
              (300, "<= 300 ns"), higher=False,
              note=" (floors: %s)" % ", ".join(fl) if fl else "", phase="C")
    r = stats.get("T-stats")
    S.add("BPF ns per proxied request, nginx TLS, TLSCapture on",
          r["bpf_ns_rq"] if r else None, "%.0f ns",
          note=" (uprobe programs' run time, not the trap: info)", phase="T")
    r = stats.get("H-stats")
    S.add("BPF ns per proxied request, nginx TLS+h2, TLSCapture+HTTP2 on",
          r["bpf_ns_rq"] if r else None, "%.0f ns",
          note=" (HTTP/2 decoded in user space: next row; info)", phase="T")
    h2on = [r for r in sel("H", "nginx-h2", "h2") if r.get("cpu_us_rq")
            and r["stats"] == "0"]
    S.add("agent CPU per request, nginx TLS+h2, TLSCapture+HTTP2 on",
          safe_med(r["cpu_us_rq"] for r in h2on) if h2on else None,
          "%.2f us", note=" (the h2 decoder: info)", phase="T")
    r = stats.get("C-sysexit")
    S.add("BPF ns per proxied request, nginx, sys-exit",
          r["bpf_ns_rq"] if r else None, "%.0f ns", (1000, "<= 1000 ns"),
          (300, "<= 300 ns"), higher=False, note=" (fallback: info)",
          phase="C")

    # --- node tax -----------------------------------------------------------
    print("\n== node tax: bin/bench_nodetax, a process that is not the proxy "
          "(its CPU time per syscall,\n   fastest of the repetitions over "
          "all rounds)")
    nt = {}
    for d in kv_lines(args.nodetax):
        nt.setdefault((d["capture"], d["kind"]), []).append(
            (float(d["ns_per_syscall"]), int(d["syscalls"])))
    kinds = (("zero", "dd bs=1 (read /dev/zero, write /dev/null)"),
             ("tcp", "1-byte loopback TCP ping-pong"))
    tax = {}
    for kind, text in kinds:
        off = nt.get(("off", kind))
        if not off:
            continue
        ns_off = min(v for v, _ in off)
        spread_off = max(v for v, _ in off) / ns_off - 1
        for cap in ("auto", "sys-exit", "floor-empty", "floor-hook",
                    "floor-read", "floor-copy"):
            on = nt.get((cap, kind))
            if not on:
                continue
            ns_on = min(v for v, _ in on)
            tax[(cap, kind)] = (ns_off, ns_on)
            print("%-42s %-11s off %7.1f ns/syscall, on %7.1f ns/syscall: "
                  "off/on %.4f, +%.1f ns per syscall  (off rounds spread "
                  "%.1f%%)" % (text, cap, ns_off, ns_on, ns_off / ns_on,
                               ns_on - ns_off, spread_off * 100))
    for cap, info in (("auto", ""), ("sys-exit", " (fallback: info)")):
        for kind, text in (("zero", "dd bs=1"), ("tcp", "1-byte TCP echo")):
            v = tax.get((cap, kind))
            fl = [(short, tax.get(("floor-" + short, kind)))
                  for short in ("empty", "hook", "read", "copy")] if not info else []
            fl = ", ".join("%s %.2f" % (n, f[0] / f[1]) for n, f in fl if f)
            S.add("node tax time off/on, %s, capture %s" %
                  (text, cap.replace("auto", "default")),
                  v[0] / v[1] if v else None, "%.4f", (0.98, ">= 0.98"),
                  (0.995, ">= 0.995"),
                  note=info + (" (floors: %s)" % fl if fl else ""), phase="A")

    # --- scale rows -----------------------------------------------------------
    print("\n== scale (bpf_stats on)")
    for prefix, key, unit in (("Dc", "conns", "keep-alive connections"),
                              ("Dh", "conns",
                               "keep-alive connections, haproxy"),
                              ("Dr", "routes", "HTTPRoutes")):
        rs = sel(prefix, capture="auto")
        if not rs:
            continue
        vals = [r["bpf_ns_rq"] for r in rs]
        # connects per request: a row of keep-alive connections that
        # opens upstream connections measures their setup, not the scale
        opens = lambda r: ("%.3f" % (int(r["tcp_opens"]) / r["served"])
                           if "tcp_opens" in r and r["served"] else "n/a")
        kinds = lambda r: (" (%s)" % r["error_kinds"]
                           if r.get("error_kinds") else "")
        fl = sel(prefix, capture="floor-hook")
        for r in rs + fl:
            print("  %6s %-22s %8.0f BPF ns/request  %8.0f req/s  errors %d%s"
                  "  connects/request %s%s"
                  % (r[key], unit, r["bpf_ns_rq"], r["rps"] or 0,
                     r["errors"] + r["non2xx"], kinds(r), opens(r),
                     "  (floor: filter + sk state)" if r in fl else ""))
        note = " (%s ns)" % " / ".join("%.0f" % v for v in vals)
        fv = [r["bpf_ns_rq"] for r in fl]
        if fv and min(fv) > 0:
            note += " (floor: %s ns, %.0f %%)" % (
                " / ".join("%.0f" % v for v in fv),
                (max(fv) / min(fv) - 1) * 100)
        flat = max(vals) / min(vals) - 1 if min(vals) > 0 else None
        S.add("BPF ns/request at %s %s: max/min - 1" %
              (" / ".join(str(r[key]) for r in rs), unit), flat and flat * 100,
              "%.1f %%", (20, "flat within 20 %"), (5, "flat"), higher=False,
              note=note, phase="D")

    # --- kernel memory ------------------------------------------------------
    print("\n== kernel memory: /proc/meminfo Slab growth while idle "
          "keep-alive connections are open")
    km = {d["capture"]: d for d in kv_lines(args.kmem)}
    per_conn = total = None
    for c, d in km.items():
        d["grow_kb"] = int(d["slab1_kb"]) - int(d["slab0_kb"])
        print("  agent %-4s: %s connections open (%s failed, %s established "
              "at the gateway), Slab +%d KiB" %
              (c.replace("auto", "on"), d.get("open"), d.get("failed"),
               d.get("estab"), d["grow_kb"]))
    slab_per_conn = None
    if "off" in km and "auto" in km and int(km["auto"].get("open", 0)):
        slab = (km["auto"]["grow_kb"] - km["off"]["grow_kb"]) * 1024
        slab_per_conn = slab / int(km["auto"]["open"])
        print("  Slab, agent on - off: %.0f KiB at %s connections = %.0f B "
              "per connection (Slab moves with every socket buffer of the "
              "machine: megabytes of noise between the two rounds)" %
              (slab / 1024, km["auto"]["open"], slab_per_conn))
    d = km.get("auto", {})
    if d.get("kmem1", "-") != "-" and d.get("tracked", "-") not in ("-", "0"):
        total = int(d["kmem1"]) - int(d["kmem0"])
        per_conn = total / int(d["tracked"])
        print("  the agent's memory cgroup: kernel memory +%.0f KiB with %s "
              "connections tracked (BPF counters: opened - closed) = %.0f B "
              "per tracked connection (what the kernel charged to the "
              "agent's maps: socket storage and its allocation overhead)" %
              (total / 1024, d["tracked"], per_conn))
    size = {}
    for line in open(args.conn_size).read().split("\n") \
            if _exists(args.conn_size) else []:
        s = line.split()
        if s[:1] == ["value_bytes"]:
            size["value"] = int(s[1])
        if "btf_struct" in s:
            i = s.index("btf_struct")
            size["struct"] = (s[i + 1], int(s[i + 2]))
        if "largest" in s:
            size["largest"] = s[s.index("largest") + 1]
    if size:
        print("  per-connection state: mm_sk_conns value %d B; BTF: struct "
              "%s, %d B; largest members (B): %s" %
              (size.get("value", 0), *size.get("struct", ("?", 0)),
               size.get("largest", "?")))
    S.add("kernel memory per tracked connection (agent's memory cgroup)",
          per_conn, "%.0f B", aim=(1024, "<= 1 KiB"), higher=False, phase="E")
    S.add("kernel memory at %s tracked connections" % d.get("tracked", "?"),
          total and total / 1048576, "%.2f MiB", phase="E")
    S.add("kernel memory per connection, Slab delta on-off (noisy)",
          slab_per_conn, "%.0f B", phase="E")
    S.add("sizeof(struct mm_conn), BTF of the loaded map",
          size.get("struct", (0, None))[1] if size else None, "%.0f B",
          aim=(1024, "<= 1 KiB"), higher=False, phase="E")

    # --- agent CPU ---------------------------------------------------------
    on = sel("A", "nginx", "auto")
    cpu = safe_med(r.get("cpu_us_rq") for r in on)
    S.add("agent CPU per request (nginx, default capture)", cpu, "%.2f us",
          (0.5, "<= 0.5 us"), higher=False, phase="A")
    S.add("agent RSS", safe_med(r.get("rss_mib") for r in on), "%.1f MiB",
          phase="A")

    # --- cost model ---------------------------------------------------------
    print("\n== cost model (what one more unit of work costs with the agent "
          "on)")
    for cap in ("auto", "sys-exit"):
        for kind, what in (("zero", "non-socket syscall (dd bs=1)"),
                           ("tcp", "socket syscall (1-byte TCP I/O)")):
            v = tax.get((cap, kind))
            if v:
                print("  %-9s per %-34s of a non-proxy process: %+7.1f ns "
                      "(CPU, bench_nodetax)" %
                      (cap.replace("auto", "default"), what, v[1] - v[0]))
    for tag, label in (("C-nginx", "default"), ("C-sysexit", "sys-exit")):
        r = stats.get(tag)
        if not r:
            continue
        io_t = sum(t for k, (t, c) in r["bpf"].items() if k in IO_PROGS)
        io_c = sum(c for k, (t, c) in r["bpf"].items() if k in IO_PROGS)
        n = max(r["served"], 1)
        # the proxy's runs: its socket I/O, or with sys_exit its syscalls
        own = r["perf"].get("raw_syscalls:sys_exit") if tag == "C-sysexit" \
            else sum(v for k, v in r["perf"].items() if k.startswith("sock:"))
        if io_c and own:
            print("  %-9s per syscall of the proxy: <= %.0f ns (the I/O "
                  "programs' %.0f BPF ns/rq over the proxy's %.2f hooked "
                  "syscalls/rq, perf;\n            the other %.2f runs/rq "
                  "are other processes' syscalls, filtered: their cost is "
                  "in this bound)" %
                  (label, io_t / own, io_t / n, own / n,
                   max(io_c - own, 0) / n))
    base, b = stats.get("C-nginx"), stats.get("C-bytes")
    if base and b and notes.get("extra_bytes"):
        extra, head = int(notes["extra_bytes"]), int(notes["head_bytes"])
        slope = (b["bpf_ns_rq"] - base["bpf_ns_rq"]) / (2 * extra)
        print("  default   per parsed head byte: %.2f ns (+%d request header "
              "bytes, parsed on both legs: %.0f -> %.0f BPF ns/request)" %
              (slope, extra, base["bpf_ns_rq"], b["bpf_ns_rq"]))
        print("  default   per request: %.0f BPF ns, of which ~%.0f ns for "
              "its ~%d head bytes and ~%.0f ns per-hook fixed cost" %
              (base["bpf_ns_rq"], slope * head, head,
               base["bpf_ns_rq"] - slope * head))
        S.add("cost per parsed head byte", slope, "%.2f ns")

    # --- BPF cost model: the harness, warm, code-cold, cold (bin/bench_bpf_exchange)
    cost = tool_output(args.bpf_cost)
    if cost:
        print("\n== BPF cost per exchange leg (bin/bench_bpf_exchange, "
              "BPF_PROG_TEST_RUN; cold = caches evicted between runs, "
              "code-cold = only code run between them)")
        print(cost)

    # --- user space: aggregation, export, memory per series ----------------
    agg, agg_lines = figures(args.aggregate)
    print("\n== user-space aggregation (bin/bench_aggregate)")
    print("\n".join(agg_lines))
    exp, exp_lines = figures(args.export)
    print("\n== export (bin/bench_export; bin/bench_store)")
    print("\n".join(exp_lines))
    cel = tool_output(args.cel)
    if cel:
        print("\n== CEL transforms (bin/bench_cel)")
        print(cel)
    mem = {}
    try:
        with open(args.memory) as f:
            lines = f.readlines()
    except OSError:
        lines = []
    for line in lines:
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
    S.add("aggregation, one core", agg.get("aggregate_events_per_s"),
          "%.2e ev/s", (5e6, ">= 5 M ev/s"), phase="F")
    S.add("aggregation + policy engine, one core",
          agg.get("aggregate_policy_events_per_s"), "%.2e ev/s",
          (5e6, ">= 5 M ev/s"), phase="F")
    if "otlp_points" in exp:
        S.add("OTLP encode, %d-point store" % exp["otlp_points"],
              exp.get("otlp_encode_ms"), "%.2f ms")
        S.add("OTLP request bytes", exp.get("otlp_bytes"), "%.0f B")
        S.add("OTLP request bytes, gzip", exp.get("otlp_gzip_bytes"),
              "%.0f B")
    S.add("memory per counter series", mem.get("counter"), "%.0f B",
          (200, "<= 200 B"), higher=False, phase="F")
    S.add("memory per explicit histogram series", mem.get("explicit"),
          "%.0f B", (1024, "<= 1 KiB"), higher=False, phase="F")
    S.add("memory per exp. histogram series, 1 obs", mem.get("exp1"),
          "%.0f B", (1024, "<= 1 KiB"), higher=False, phase="F")
    S.add("memory per exp. histogram, 160 buckets", mem.get("exp160"),
          "%.0f B", (1024, "<= 1 KiB"), higher=False, phase="F")

    print("\n== summary (target = must (aim); "
          "ratios are medians of the rounds)")
    S.print()
    results["summary"] = [list(r) for r in S.rows]
    if prev is not None:
        compare(prev, results)
    if args.results_out:
        with open(args.results_out, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
        print("\nresults (with the fingerprint): %s" % args.results_out)


def compare(prev, cur):
    """Side by side with a previous run of the same fingerprint."""
    old = {r[0]: r for r in prev.get("summary", [])}
    print("\n== compared with the previous run (same hardware fingerprint)")
    print("%-56s %-26s %-26s" % ("figure", "previous", "now"))
    for r in cur.get("summary", []):
        if r[0] in old:
            print("%-56s %-26s %-26s" % (r[0], old[r[0]][1], r[1]))


def _exists(path):
    try:
        open(path).close()
        return True
    except OSError:
        return False


if __name__ == "__main__":
    main()
