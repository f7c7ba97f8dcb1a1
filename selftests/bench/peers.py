# SPDX-License-Identifier: Apache-2.0
"""Phase P of make bench (the peers' method), from run.sh's $W/peers:
paired deltas of each slot against agent off in the same round, with
bootstrap 95 % confidence intervals over the rounds, and the targets judged
by the interval's upper bound (<= must: pass; <= aim: aim met), never by
the median. report.py calls report()."""
import json
import random
import statistics

SEED = 20261128
RESAMPLES = 10000
SLOTS = ("floor-empty", "floor-hook", "floor-read", "floor-skb", "auto",
         "listeners", "baseline")
# listeners: the agent with a second Gateway listener, so that the kernel
# table carries listener ports (a lookup per accepted connection)
NAMES = {"off": "agent off", "floor-empty": "empty floor",
         "floor-hook": "hook floor", "floor-read": "read floor",
         "floor-skb": "skb floor", "auto": "agent",
         "listeners": "agent+2 lsn", "baseline": "baseline"}



def phase_left_out(phase, phases):
    """The verdict of a row whose phase BENCH_PHASES (PHASES) left out."""
    return "not measured: phase %s is not in BENCH_PHASES (%s)" % (phase,
                                                                    phases)

def _kv(line):
    return dict(w.split("=", 1) for w in line.split() if "=" in w)


def load_rows(path):
    rows, sat = [], []
    try:
        with open(path) as f:
            lines = [_kv(x) for x in f if x.strip()]
    except OSError:
        return rows, sat
    for r in lines:
        if r.get("kind") == "sat":
            sat.append(r)
            continue
        try:
            with open(r["lg"]) as f:
                r.update(json.load(f))
        except (OSError, ValueError):
            continue
        n = max(int(r["completed"]), 1)
        tck = float(r["tck"])
        r["gw_us"] = int(r["gw_ns"]) / 1e3 / n
        r["gw_tick_us"] = int(r["gw_ticks"]) / tck * 1e6 / n
        r["node_us"] = int(r["node_ticks"]) / tck * 1e6 / n
        r["steal_us"] = int(r["steal_ticks"]) / tck * 1e6 / n
        r["agent_us"] = int(r["agent_uticks"]) / tck * 1e6 / n
        # on-CPU ns (schedstat, user + system): ticks are too coarse here
        r["agent_ns_us"] = (int(r["agent_ns"]) / 1e3 / n
                            if "agent_ns" in r else None)
        r["p50"] = float(r["p50_us"])
        r["p99"] = float(r["p99_us"])
        r["nodetax"] = (None if r["nodetax_ns"] == "-" else
                        float(r["nodetax_ns"]))
        rows.append(r)
    return rows, sat


def bootstrap(vals, rng):
    """mean and 95 % percentile interval of the mean, resampling vals"""
    if not vals:
        return None
    n = len(vals)
    means = sorted(sum(rng.choice(vals) for _ in range(n)) / n
                   for _ in range(RESAMPLES))
    return (sum(vals) / n, means[int(0.025 * RESAMPLES)],
            means[int(0.975 * RESAMPLES) - 1])


def paired(rows, gw, load, slot, key, base="off"):
    """per round: slot's figure - base's figure, same gateway/load/round"""
    by = {}
    for r in rows:
        if r["gw"] == gw and r["load"] == load and r["stats"] == "0":
            by.setdefault(r["round"], {})[r["capture"]] = r
    out = []
    for rnd in sorted(by):
        a, b = by[rnd].get(slot), by[rnd].get(base)
        if a and b and a.get(key) is not None and b.get(key) is not None:
            out.append(a[key] - b[key])
    return out


def ci_text(ci, f="%+.2f"):
    if ci is None:
        return "n/a"
    return (f + " [" + f + ", " + f + "]") % ci


def verdict(ci, must, aim):
    if ci is None:
        return "MISSING"
    hi = ci[2]
    if hi > must:
        return "MISS"
    return "pass, aim met" if aim is not None and hi <= aim else "pass"


def bpf_ns(r):
    """(run_time_ns, run_cnt) of the slot's programs over the round"""
    try:
        with open(r["bpf0"]) as f:
            a = json.load(f)
        with open(r["bpf1"]) as f:
            b = json.load(f)
    except (OSError, ValueError, KeyError):
        return None
    t = sum(b[k][0] - a.get(k, [0, 0])[0] for k in b)
    c = sum(b[k][1] - a.get(k, [0, 0])[1] for k in b)
    return t, c


def scale_conns(rounds, gw):
    """phase D's BPF ns per request by connection count (agent, bpf_stats
    on): nginx's rounds are Dc<N>, haproxy's Dh<N>"""
    prefix = "Dh" if gw == "haproxy" else "Dc"
    rs = [r for r in rounds if r["tag"].startswith(prefix) and
          r["gw"] == gw and r["capture"] == "auto" and r.get("bpf_ns_rq")]
    return sorted((int(r["conns"]), r["bpf_ns_rq"]) for r in rs)


def report(path, notes, rounds=()):
    """Prints phase P; returns (summary rows, a dict for the results)"""
    rows, sat = load_rows(path)
    out = {"seed": SEED, "resamples": RESAMPLES}
    summary = []
    if not rows and not sat:
        return summary, out
    rng = random.Random(SEED)
    gws = sorted({r["gw"] for r in rows} | {r["gw"] for r in sat})
    loads = sorted({r["load"] for r in rows}, key=int)

    print("\n== P: the peers' method (open loop, bin/loadgen), "
          "paired against agent off in the same round")
    print("bootstrap: %d resamples of the rounds, seed %d; [95 %% interval] "
          "of the mean delta" % (RESAMPLES, SEED))
    chk = notes.get("lg_check")
    if chk:
        try:
            with open(chk) as f:
                lg = json.load(f)
            with open(notes["h2_check"]) as f:
                v = sorted(int(x.split()[2]) for x in f if x.strip())
            print("loadgen vs h2load, 200 req/s on one connection: p50 %.0f "
                  "vs %d us, p99 %.0f vs %d us" %
                  (lg["p50_us"], v[len(v) // 2], lg["p99_us"],
                   v[int(len(v) * 0.99)]))
        except (OSError, ValueError, KeyError, IndexError):
            print("loadgen vs h2load: no cross-check (h2load failed)")

    if sat:
        print("\nsaturation (wrk, closed loop, information): req/s")
        print("%-8s %-7s %10s %10s %7s" % ("gateway", "pinned", "off",
                                           "agent", "ratio"))
        for gw in gws:
            for p in ("0", "1"):
                s = {r["capture"]: r for r in sat
                     if r["gw"] == gw and r["pinned"] == p}
                if "off" not in s:
                    continue
                off = float(s["off"]["rps"] or 0)
                on = float(s.get("auto", {}).get("rps") or 0)
                print("%-8s %-7s %10.0f %10.0f %7s" %
                      (gw, "yes" if p == "1" else "no", off, on,
                       "%.3f" % (on / off) if off else "n/a"))

    lost = [r for r in rows if r["stats"] == "0" and
            int(r["requests"]) != int(r["completed"])]
    res = {}
    for gw in gws:
        for load in loads:
            sel = [r for r in rows if r["gw"] == gw and r["load"] == load
                   and r["stats"] == "0"]
            if not sel:
                continue
            print("\n-- %s at %s %% of capacity (%s req/s), %d rounds" %
                  (gw, load, sel[0]["rate"], len({r["round"] for r in sel})))
            print("%-12s %9s %9s %9s %9s %9s %9s %9s %9s" %
                  ("slot", "gw us/rq", "node us", "steal us", "p50 us",
                   "p99 us", "agent us", "tcp ns/sc", "late"))
            for slot in ("off",) + SLOTS:
                ss = [r for r in sel if r["capture"] == slot]
                if not ss:
                    continue
                m = statistics.median
                tcp = [r["nodetax"] for r in ss if r["nodetax"] is not None]
                print("%-12s %9.2f %9.2f %9.2f %9.1f %9.1f %9.3f %9s %9d" %
                      (NAMES[slot], m([r["gw_us"] for r in ss]),
                       m([r["node_us"] for r in ss]),
                       m([r["steal_us"] for r in ss]),
                       m([r["p50"] for r in ss]), m([r["p99"] for r in ss]),
                       m([r["agent_ns_us"] if r["agent_ns_us"] is not None
                          else r["agent_us"] for r in ss]),
                       "%.1f" % min(tcp) if tcp else "-",
                       sum(int(r["late"]) for r in ss)))
            print("paired deltas vs agent off, mean [95 % interval]:")
            print("%-12s %-26s %-26s %-26s %-26s %-26s" %
                  ("slot", "gateway CPU us/rq", "node CPU us/rq",
                   "p50 us", "p99 us", "tcp ping-pong ns/syscall"))
            for slot in SLOTS:
                d = {k: bootstrap(paired(rows, gw, load, slot, k), rng)
                     for k in ("gw_us", "node_us", "p50", "p99", "nodetax")}
                if all(v is None for v in d.values()):
                    continue
                res[(gw, load, slot)] = d
                print("%-12s %-26s %-26s %-26s %-26s %-26s" %
                      (NAMES[slot], ci_text(d["gw_us"]),
                       ci_text(d["node_us"]), ci_text(d["p50"], "%+.1f"),
                       ci_text(d["p99"], "%+.1f"),
                       ci_text(d["nodetax"], "%+.1f")))
                a = [r for r in sel if r["capture"] == slot]
                # the agent's own CPU (schedstat ns, user + system: a bound
                # on its user-space CPU); ticks when an older run has no ns
                res[(gw, load, slot)]["agent_us"] = bootstrap(
                    [r["agent_ns_us"] if r["agent_ns_us"] is not None else
                     r["agent_us"] for r in a], rng)

    # the nodetax figure: the agent against the empty floor, same round
    tcp_floor = {}
    for gw in gws:
        for load in loads:
            tcp_floor[(gw, load)] = bootstrap(
                paired(rows, gw, load, "auto", "nodetax", "floor-empty"), rng)

    # BPF ns per request: bpf_stats rounds (BENCH_PEER_STATS_ROUNDS), the
    # empty floor of the same round taken off
    stats = [r for r in rows if r["stats"] == "1"]
    bpf, bpf_rounds = {}, {}
    if stats:
        print("\n-- BPF ns per request (bpf_stats rounds; the empty floor's "
              "ns per run in the same round, the stats' own cost, taken off "
              "every run)")
        print("%-8s %-5s %-12s %10s %10s %12s %12s" %
              ("gateway", "round", "slot", "runs/rq", "ns/run", "ns/rq raw",
               "ns/rq net"))
        for gw in gws:
            for rnd in sorted({r["round"] for r in stats if r["gw"] == gw},
                              key=int):
                ss = {r["capture"]: r for r in stats
                      if r["gw"] == gw and r["round"] == rnd}
                e = ss.get("floor-empty")
                et = bpf_ns(e) if e else None
                per_run = et[0] / et[1] if et and et[1] else 0.0
                for slot in SLOTS:
                    r = ss.get(slot)
                    t = bpf_ns(r) if r else None
                    if not t:
                        continue
                    n = max(int(r["completed"]), 1)
                    net = (t[0] - t[1] * per_run) / n
                    bpf_rounds.setdefault((gw, slot), {})[rnd] = net
                    print("%-8s %-5s %-12s %10.2f %10.1f %12.0f %12.0f" %
                          (gw, rnd, NAMES[slot], t[1] / n,
                           t[0] / max(t[1], 1), t[0] / n, net))
        for k, v in bpf_rounds.items():
            bpf[k] = sum(v.values()) / len(v)

    def bpf_paired(gw, a, b, div=False):
        """per stats round a / b (div) or a - b, with its interval"""
        x, y = bpf_rounds.get((gw, a), {}), bpf_rounds.get((gw, b), {})
        v = [x[k] / y[k] if div else x[k] - y[k]
             for k in x if k in y and (not div or y[k])]
        return bootstrap(v, rng), len(v)

    # --- the targets ----------------------------------------------------
    lo = loads[0] if loads else None
    print("\n== P: targets (judged by the 95 % interval's upper bound; "
          "agent = default capture)")
    hdr = "%-10s %-52s %-28s %-22s %s"
    print(hdr % ("gateway", "figure", "measured: mean [95 % CI]",
                 "must (aim)", "verdict"))

    def missing(gw, need):
        """why a row has no value: what the run left out"""
        if not any(r["gw"] == gw for r in rows):
            return "not measured: no phase P rounds for %s" % gw
        if need and not any(r["gw"] == gw and r["capture"] == need
                            for r in rows):
            return ("not measured: no %s slot (BENCH_PEER_SLOTS)" %
                    NAMES.get(need, need))
        return "not measured: no paired round (see the slots above)"

    def row(gw, name, ci, must, aim, unit, f="%+.2f", need="auto"):
        v = verdict(ci, must, aim)
        if ci is None:
            v = missing(gw, need)
        t = "<= %+g %s (%+g)" % (must, unit, aim) if aim is not None else \
            "<= %+g %s" % (must, unit)
        print(hdr % (gw, name, ci_text(ci, f), t, v))
        summary.append(("%s: %s" % (gw, name), ci_text(ci, f), t, v))

    for gw in gws:
        d = res.get((gw, lo, "auto"), {})
        # a gateway whose CPU reads 0 was measured on the wrong PIDs
        dead = [r for r in rows if r["gw"] == gw and r["stats"] == "0"
                and int(r["gw_ns"]) == 0]
        if dead:
            print(hdr % (gw, "gateway CPU added per request at %s %% load" %
                         lo, "n/a", "<= +2 us (+1)",
                         "not measured: the gateway's CPU read 0 in %d of "
                         "its slots (run.sh read other PIDs than its own)" %
                         len(dead)))
            summary.append(("%s: gateway CPU added per request" % gw, "n/a",
                            "<= +2 us (+1)", "not measured: CPU read 0"))
        else:
            row(gw, "gateway CPU added per request at %s %% load" % lo,
                d.get("gw_us"), 2.0, 1.0, "us")
        row(gw, "whole-node CPU added per request at %s %% load" % lo,
            d.get("node_us"), 3.0, 1.5, "us")
        row(gw, "latency p50 added at %s %% load, open loop" % lo,
            d.get("p50"), 3.0, 1.5, "us", "%+.1f")
        row(gw, "latency p99 added at %s %% load, open loop" % lo,
            d.get("p99"), 10.0, 5.0, "us", "%+.1f")
        ci, nr = bpf_paired(gw, "auto", "floor-read", div=True)
        t = "<= 1.6 (1.3)"
        if ci is None:
            m, v = "n/a", ("not measured: no bpf_stats round with the agent "
                           "and the read floor for %s" % gw)
        elif nr < 2:
            m = "%.2f (%.0f / %.0f ns)" % (ci[0], bpf[(gw, "auto")],
                                           bpf[(gw, "floor-read")])
            v = ("MISS" if ci[0] > 1.6 else "pass, aim met" if ci[0] <= 1.3
                 else "pass") + (" (one bpf_stats round: no interval; "
                                 "BENCH_PEER_STATS_ROUNDS)")
        else:
            m = ci_text(ci, "%.2f") + " (%d rounds)" % nr
            v = verdict(ci, 1.6, 1.3)
        print(hdr % (gw, "BPF ns per request / read floor (same round)", m,
                     t, v))
        summary.append(("%s: BPF ns/request / read floor" % gw, m, t, v))
        row(gw, "non-proxy 1-byte TCP ping-pong vs empty floor",
            tcp_floor.get((gw, lo)), 30.0, 0.0, "ns", "%+.1f",
            "floor-empty" if (gw, lo, "auto") in res else "auto")
        sc = scale_conns(rounds, gw)
        t = "within 20 % (10 %)"
        if len(sc) >= 2 and sc[0][1] > 0:
            flat = max(v for _, v in sc) / min(v for _, v in sc) - 1
            m = "%+.1f %% (%s ns)" % (flat * 100, " / ".join(
                "%d: %.0f" % x for x in sc))
            v = ("MISS" if flat > 0.2 else
                 "pass, aim met" if flat <= 0.1 else "pass")
            v += " (one bpf_stats round per count: no interval)"
        else:
            m = "n/a"
            ph = notes.get("phases", "")
            v = (phase_left_out("D", ph) if ph and "D" not in ph else
                 "not measured: BENCH_SCALE_GATEWAYS leaves %s out" % gw
                 if gw not in notes.get("scale_gateways", gw).split(",")
                 else "not measured: phase D gave no agent round for %s" % gw)
        print(hdr % (gw, "10 -> 10 000 connections: BPF ns/rq max/min-1 (D)",
                     m, t, v))
        summary.append(("%s: BPF ns/request, 10 -> 10 000 connections" % gw,
                        m, t, v))
        row(gw, "agent CPU per request (user + system: bounds user)",
            d.get("agent_us"), 0.5, 0.2, "us", "%.3f")
        bad = [r for r in lost if r["gw"] == gw]
        n = len([r for r in rows if r["gw"] == gw and r["stats"] == "0"])
        v = missing(gw, None) if not n else "MISS" if bad else "pass"
        m = "%d of %d slots differ" % (len(bad), n)
        print(hdr % (gw, "loadgen's completed requests vs the access log", m,
                     "exact", v))
        summary.append(("%s: completed vs access log" % gw, m, "exact", v))
        # the agent's count of the shop route against the access log, in
        # every agent slot (each slot's requests are all the shop route's)
        ag = [r for r in rows if r["gw"] == gw and "route_count" in r
              and r["capture"] in ("auto", "listeners")]
        off = [(int(r["route_count"]), int(r["requests"])) for r in ag
               if int(r["route_count"]) != int(r["requests"])]
        m = "%d of %d agent slots differ%s" % (
            len(off), len(ag), (" (agent / log: %s)" % ", ".join(
                "%d / %d" % x for x in off[:4])) if off else "")
        v = ("not measured: no agent slot recorded the agent's count "
             "(route_count)" if not ag else "MISS" if off else "pass")
        print(hdr % (gw, "per-route counts (agent) vs the access log", m,
                     "exact", v))
        summary.append(("%s: per-route counts vs access log" % gw, m,
                        "exact", v))
    print("(latency and CPU in us; the connection row is phase D's)")

    # skb vs read floor, the decision's figures
    for gw in gws:
        for load in loads:
            sk = paired(rows, gw, load, "floor-skb", "gw_us", "floor-read")
            ci = bootstrap(sk, rng)
            if ci:
                print("%s at %s %%: skb floor - read floor, gateway CPU "
                      "us/rq: %s" % (gw, load, ci_text(ci)))
                out["skb_minus_read_%s_%s" % (gw, load)] = ci
        for load in loads:
            nd = bootstrap(paired(rows, gw, load, "floor-skb", "node_us",
                                  "floor-read"), rng)
            if nd:
                print("%s at %s %%: skb floor - read floor, node CPU us/rq: "
                      "%s" % (gw, load, ci_text(nd)))
                out["skb_minus_read_node_%s_%s" % (gw, load)] = nd
        ci, nr = bpf_paired(gw, "floor-skb", "floor-read")
        if ci:
            print("%s: BPF ns/rq skb floor - read floor: %s (%d bpf_stats "
                  "rounds; skb %.0f, read %.0f)" %
                  (gw, ci_text(ci, "%+.0f") if nr > 1 else "%+.0f" % ci[0],
                   nr, bpf[(gw, "floor-skb")], bpf[(gw, "floor-read")]))
            out["skb_minus_read_bpf_%s" % gw] = ci
        # the listener port in the kernel table: the agent with two
        # listeners against the agent with one
        for load in loads:
            for k, name in (("gw_us", "gateway CPU us/rq"),
                            ("node_us", "node CPU us/rq")):
                c2 = bootstrap(paired(rows, gw, load, "listeners", k,
                                      "auto"), rng)
                if c2:
                    print("%s at %s %%: agent with 2 listeners - agent, %s: "
                          "%s" % (gw, load, name, ci_text(c2)))
        ci, nr = bpf_paired(gw, "listeners", "auto")
        if ci:
            print("%s: BPF ns/rq agent with 2 listeners - agent: %s (%d "
                  "bpf_stats rounds)" % (gw, ci_text(ci, "%+.0f") if nr > 1
                                         else "%+.0f" % ci[0], nr))
            out["listeners_minus_agent_bpf_%s" % gw] = ci
        # another agent binary (BENCH_AGENT_BASELINE) in the same rounds
        for load in loads:
            for k, name in (("agent_ns_us", "agent CPU us/rq"),
                            ("gw_us", "gateway CPU us/rq"),
                            ("node_us", "node CPU us/rq")):
                c2 = bootstrap(paired(rows, gw, load, "auto", k,
                                      "baseline"), rng)
                if c2:
                    print("%s at %s %%: agent - baseline, %s: %s" %
                          (gw, load, name,
                           ci_text(c2, "%+.3f" if k == "agent_ns_us"
                                   else "%+.2f")))
                    out["agent_minus_baseline_%s_%s_%s" % (k, gw, load)] = c2
    out["deltas"] = {"%s/%s/%s" % k: v for k, v in res.items()}
    out["bpf_ns_rq"] = {"%s/%s" % k: v for k, v in bpf.items()}
    out["sat"] = sat
    return summary, out
