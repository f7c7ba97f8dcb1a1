#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Compare the agent's /metrics with the proxy's own access log.

The access log is the ground truth: each line is one request as the proxy
saw it, with the route the proxy chose (nginx config generated from the
same HTTPRoutes, or the haproxy backend named after the route), the status,
and the proxy's own timers. The agent must report exactly the same counts.

  mmcheck.py compare --url URL --log FILE [--format nginx|haproxy] ...
  mmcheck.py get --url URL METRIC [LABEL=VALUE]...
  mmcheck.py logcount --log FILE [--format F] [ROUTE]
  mmcheck.py steal-mark FILE
"""
import argparse
import collections
import math
import os
import sys
import time

import promtext

DOWN_TOTAL = "envoy_http_downstream_rq_total"
DOWN_TIME = "envoy_http_downstream_rq_time"
UP_TOTAL = "envoy_cluster_upstream_rq_total"
UP_TIME = "envoy_cluster_upstream_rq_time"

# Field order of the nginx access log (tab-separated); see lib.sh.
NGINX_FIELDS = ("route status request_time upstream_response_time "
                "upstream_status method host uri connection "
                "connection_requests upstream_connect_time").split()
# haproxy log-format in lib.sh: backend, server, status, Ta, Tr, method,
# host, uri, termination state.
HAPROXY_FIELDS = "route server status ta tr method host uri tsc".split()


class Rec:
    __slots__ = ("route", "rule", "cls", "down_ms", "up_cls", "up_ms", "raw")


def status_class(code):
    """'2xx'.. for a status; 'aborted' when the client went away first."""
    if code in (0, 499, -1):
        return "aborted"
    if 100 <= code <= 599:
        return "%dxx" % (code // 100)
    return "other"


def norm_route(s):
    """Route as the proxy logged it -> ('NS/NAME' | 'unmatched' | '-', rule).

    Accepts the spellings a generated config may use: Envoy Gateway's
    cluster name httproute/NS/NAME/rule/N, 'NS/NAME rule N', NS/NAME/N,
    and haproxy backend names r__NS__NAME__N.
    """
    s = s.strip()
    if s in ("", "-"):
        return "-", None
    if s.lower() == "unmatched":
        return "unmatched", None
    if s.startswith("r__"):
        p = s[3:].split("__")
        return "%s/%s" % (p[0], p[1]), int(p[2]) if len(p) > 2 else None
    s = s.replace(" rule ", "/rule/")
    p = [x for x in s.split("/") if x]
    if p and p[0] == "httproute":
        p = p[1:]
    if len(p) >= 4 and p[2] == "rule":
        return "%s/%s" % (p[0], p[1]), int(p[3])
    if len(p) == 3 and p[2].isdigit():
        return "%s/%s" % (p[0], p[1]), int(p[2])
    if len(p) == 2:
        return "%s/%s" % (p[0], p[1]), None
    raise ValueError("cannot read route %r" % s)


def _secs(v):
    """nginx timer field: '0.012', '-', or '0.001, 0.002' (retries)."""
    v = v.strip()
    if v in ("", "-"):
        return None
    return sum(float(x) for x in v.replace(":", ",").split(",")
               if x.strip() not in ("", "-"))


def _first_status(v):
    v = v.strip()
    if v in ("", "-"):
        return None
    last = v.replace(":", ",").split(",")[-1].strip()
    return int(last) if last not in ("", "-") else None


def read_log(path, fmt, fields=None):
    recs = []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                continue
            r = Rec()
            r.raw = line
            if fmt == "nginx":
                names = fields or NGINX_FIELDS
                v = dict(zip(names, line.split("\t")))
                r.route, r.rule = norm_route(v["route"])
                r.cls = status_class(int(v["status"]))
                r.down_ms = _secs(v["request_time"]) * 1000.0
                ups = _first_status(v.get("upstream_status", "-"))
                ut = _secs(v.get("upstream_response_time", "-"))
                # nginx starts an upstream exchange at connect(), the agent
                # (as documented) at the first request byte sent: the
                # connect, and a worker that ran late after it (300 ms once
                # on a loaded VM, test_bytewise), are not the agent's
                uc = _secs(v.get("upstream_connect_time", "-"))
                if ut is not None and uc is not None:
                    ut = max(ut - uc, 0.0)
                r.up_ms = None if ut is None else ut * 1000.0
                if ups is not None:
                    r.up_cls = status_class(ups)
                elif ut is not None:
                    # sent upstream, no response status: nginx gave up on
                    # the upstream exchange (client closed first)
                    r.up_cls = "aborted"
                else:
                    r.up_cls = None
            else:
                v = dict(zip(HAPROXY_FIELDS, line.split("\t")))
                # no backend chosen (bad request): haproxy logs the
                # frontend's name, "gw"
                r.route, r.rule = norm_route(v["route"]) \
                    if v["route"] != "gw" else ("-", None)
                st = int(v["status"])
                r.cls = status_class(st)
                ta = int(v["ta"])
                r.down_ms = float(ta) if ta >= 0 else 0.0
                tr = int(v["tr"])
                if v["server"] in ("<NOSRV>", "-", ""):
                    r.up_cls, r.up_ms = None, None
                else:
                    r.up_cls = status_class(st) if tr >= 0 else "aborted"
                    r.up_ms = float(tr) if tr >= 0 else None
            recs.append(r)
    return recs


def agent_key(labels):
    name = labels.get("k8s_httproute_name", "")
    if name == "unmatched":
        route = "unmatched"
    elif name == "":
        route = "-"
    elif not labels.get("k8s_namespace_name"):
        route = name  # the agent's own marker, e.g. "unknown"
    else:
        route = "%s/%s" % (labels.get("k8s_namespace_name", ""), name)
    rule = None
    cl = labels.get("envoy_cluster_name", "")
    if "/rule/" in cl:
        rule = int(cl.rsplit("/", 1)[1])
    if labels.get("milometer_aborted") == "true":
        cls = "aborted"
    else:
        cls = labels.get("http_response_status_code_class") or \
            status_class(int(labels.get("http_response_status_code", "0")))
    return route, rule, cls


def _merge(route, merges):
    for group in merges:
        if route in group or "*" in group:
            return "+".join(sorted(group))
    return route


def _key(route, rule, cls, by_rule, merges):
    m = _merge(route, merges)
    # a merged group compares as one route: its rules differ by design
    return m, rule if by_rule and m == route else None, cls


def log_counts(recs, leg, by_rule, merges, ignore_unrouted):
    c = collections.Counter()
    for r in recs:
        if ignore_unrouted and r.route == "-":
            continue
        if leg == "up":
            if r.up_cls is None:
                continue
            cls = r.up_cls
        else:
            cls = r.cls
        c[_key(r.route, r.rule, cls, by_rule, merges)] += 1
    return c


def agent_counts(samples, name, by_rule, merges):
    c = collections.Counter()
    for n, labels, v in samples:
        if n != name:
            continue
        c[_key(*agent_key(labels), by_rule, merges)] += int(v)
    return +c


def _sums(samples, name):
    s = collections.Counter()
    for n, labels, v in samples:
        if n == name:
            s[agent_key(labels)[0]] += v
    return s


def show(title, want, got):
    keys = sorted(set(want) | set(got), key=str)
    print("%s:" % title)
    print("  %-28s %-5s %-8s %8s %8s" % ("route", "rule", "class", "log",
                                         "agent"))
    bad = 0
    for k in keys:
        mark = "" if want[k] == got[k] else "   <-- differs"
        bad += want[k] != got[k]
        print("  %-28s %-5s %-8s %8d %8d%s" % (k[0], "-" if k[1] is None
                                              else k[1], k[2], want[k],
                                              got[k], mark))
    print("  total %d log, %d agent" % (sum(want.values()),
                                        sum(got.values())))
    return bad


def steal_ns():
    """The machine's steal time, all CPUs summed, in ns (/proc/stat)."""
    hz = os.sysconf("SC_CLK_TCK")
    steal = 0
    try:
        with open("/proc/stat") as f:
            for line in f:
                p = line.split()
                if p[0].startswith("cpu") and p[0] != "cpu" and len(p) > 8:
                    steal += int(p[8]) * 10**9 // hz
    except OSError:
        pass  # no procfs (a bare chroot): no steal known
    return steal


def cmd_steal_mark(a):
    with open(a.file, "w") as f:
        f.write("%d\n" % steal_ns())
    return 0


def steal_bound_ms(a):
    """The steal since steal-mark's snapshot, in ms, printed; 0 without one.

    The proxy's timers read a clock cached when its event loop woke up; the
    agent's read the syscalls' exits. When the host takes a vCPU from the
    proxy between the two, one request's figures differ by that stall,
    whatever its length: the latency bounds allow the steal measured.
    """
    if not a.steal_base or not os.path.exists(a.steal_base):
        return 0.0
    with open(a.steal_base) as f:
        ms = max(0, steal_ns() - int(f.read())) / 1e6
    print("the machine's steal since the agent started: %.1f ms"
          " (added to the latency bounds)" % ms)
    return ms


def latency(recs, samples, strict, merges, slack_ms, steal_ms=0.0):
    """Per route: log timer sum vs agent histogram sum, both in ms."""
    ok = True
    for leg, metric, attr in (("downstream", DOWN_TIME, "down_ms"),
                              ("upstream", UP_TIME, "up_ms")):
        lsum = collections.Counter()
        lcnt = collections.Counter()
        for r in recs:
            v = getattr(r, attr)
            if v is None or r.route == "-" or r.cls == "aborted":
                continue
            k = _merge(r.route, merges)
            lsum[k] += v
            lcnt[k] += 1
        asum = collections.Counter()
        for n, labels, v in samples:
            if n == metric + "_sum" and \
                    labels.get("milometer_aborted") != "true":
                asum[_merge(agent_key(labels)[0], merges)] += v
        print("%s latency sums (ms):" % leg)
        for k in sorted(set(lsum) | set(asum)):
            lv, av, n = lsum[k], asum[k], lcnt[k]
            diff = av - lv
            rel = diff / lv * 100 if lv else float("nan")
            # The proxy's timers have ms resolution and read a clock cached
            # per event-loop turn, the agent reads the syscall times: allow
            # 5 % plus slack_ms per request for that rounding,
            # plus a floor of 3 ms: both timers end in a whole ms; plus
            # the steal measured (steal_bound_ms)
            bound = 0.05 * lv + slack_ms * n + 3.0 + steal_ms
            if k in strict:
                bound = 0.05 * lv + 3.0 + steal_ms
            good = abs(diff) <= bound
            ok &= good
            print("  %-28s n=%-6d log %10.1f agent %10.1f diff %+9.1f "
                  "(%+.1f%%) bound %.1f%s" % (k, n, lv, av, diff,
                                              0 if math.isnan(rel) else rel,
                                              bound, "" if good
                                              else "   <-- out of bound"))
    return ok


def cmd_compare(a):
    recs = read_log(a.log, a.format, a.fields.split(",") if a.fields
                    else None)
    merges = [set(m.split(",")) for m in a.merge]
    by_rule = not a.route_only and all(r.rule is not None for r in recs
                                       if r.route not in ("-",
                                                          "unmatched"))
    if a.expect_total is not None:
        n = sum(1 for r in recs if not (a.ignore_unrouted and
                                        r.route == "-"))
        if n != a.expect_total:
            print("access log has %d requests, the client counted %d" %
                  (n, a.expect_total))
            return 1
    want_d = log_counts(recs, "down", by_rule, merges, a.ignore_unrouted)
    want_u = log_counts(recs, "up", by_rule, merges, a.ignore_unrouted)
    deadline = time.monotonic() + a.timeout
    last, stable_since = None, time.monotonic()
    while True:
        samples = promtext.scrape(a.url)
        got_d = agent_counts(samples, DOWN_TOTAL, by_rule, merges)
        got_u = agent_counts(samples, UP_TOTAL, by_rule, merges)
        match = got_d == +want_d and (a.no_upstream or got_u == +want_u)
        now = time.monotonic()
        if (got_d, got_u) != last:
            last, stable_since = (got_d, got_u), now
        # stop when equal, or when the agent stopped changing for 3 s
        if match or now > deadline or now - stable_since > a.settle:
            break
        time.sleep(0.2)
    bad = show("downstream requests", want_d, got_d)
    if not a.no_upstream:
        bad += show("upstream requests", want_u, got_u)
    # histogram _count must equal the counter for the same series
    for tot, hist in ((DOWN_TOTAL, DOWN_TIME), (UP_TOTAL, UP_TIME)):
        t = promtext.total(samples, tot)
        h = promtext.total(samples, hist + "_count")
        if t != h:
            print("%s = %d but %s_count = %d" % (tot, t, hist, h))
            bad += 1
    lat_ok = True
    if not a.no_latency:
        lat_ok = latency(recs, samples, set(a.strict_latency), merges,
                         a.slack_ms, steal_bound_ms(a))
    if not lat_ok and a.latency_info:
        print("(latency sums reported, not asserted: --latency-info)")
        lat_ok = True
    if bad or not lat_ok:
        print("MISMATCH (log %s, metrics %s)" % (a.log, a.url))
        return 1
    print("agent matches the access log")
    return 0


def _route_counts(recs, leg):
    c = collections.Counter()
    for r in recs:
        if r.route == "-":
            continue
        if leg == "up":
            if r.up_cls is None:
                continue
        c[r.route] += 1
    return c


def _promql(base, q):
    import json
    import urllib.parse
    import urllib.request
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
    with urllib.request.urlopen(url, timeout=5) as r:
        d = json.load(r)
    if d.get("status") != "success":
        raise RuntimeError("prometheus query %s: %s" % (q, d))
    out = collections.Counter()
    for res in d["data"]["result"]:
        m = res["metric"]
        name = m.get("k8s_httproute_name", "")
        key = name if name in ("unmatched", "") else \
            "%s/%s" % (m.get("k8s_namespace_name", ""), name)
        out[key] += int(round(float(res["value"][1])))
    return out


def cmd_promql(a):
    """A real Prometheus scraped the agent: its query API must return the
    access log's per-route request and histogram counts."""
    recs = read_log(a.log, "nginx")
    want = {"down": _route_counts(recs, "down"),
            "up": _route_counts(recs, "up")}
    by = "sum by (k8s_namespace_name, k8s_httproute_name) "
    queries = {
        "down": by + "(%s)" % DOWN_TOTAL,
        "down_hist": by + "(%s_count)" % DOWN_TIME,
        "up": by + "(%s)" % UP_TOTAL,
        "up_hist": by + "(%s_count)" % UP_TIME,
    }
    deadline = time.monotonic() + a.timeout
    while True:
        got = {k: _promql(a.prom, q) for k, q in queries.items()}
        ok = all(+got[k] == +want[k.split("_")[0]] for k in queries)
        if ok or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    bad = 0
    for k, q in queries.items():
        w = want[k.split("_")[0]]
        print("%s" % q)
        for r in sorted(set(w) | set(got[k])):
            mark = "" if w[r] == got[k][r] else "   <-- differs"
            bad += w[r] != got[k][r]
            print("  %-28s log %8d prometheus %8d%s" % (r, w[r], got[k][r],
                                                       mark))
    if bad:
        print("MISMATCH between prometheus (%s) and the log" % a.prom)
        return 1
    print("prometheus matches the access log")
    return 0


CONTRACT_COUNT = ("gateway_networking_k8s_io_httproute_delivery_"
                  "upstream_request_count_total")
CONTRACT_LAT = ("gateway_networking_k8s_io_httproute_delivery_"
                "upstream_request_latency_seconds")


def cmd_contract(a):
    """The seed's upstream count and latency policies: target metrics with
    the definitions' labels, values equal to the log's upstream requests."""
    recs = read_log(a.log, "nginx")
    want = collections.Counter()
    want_route = collections.Counter()
    want_ms = collections.Counter()
    for r in recs:
        if r.up_cls is None or r.route in ("-", "unmatched"):
            continue
        want[(r.route, r.up_cls)] += 1
        want_route[r.route] += 1
        if r.cls != "aborted":
            want_ms[r.route] += r.up_ms
    deadline = time.monotonic() + a.timeout
    while True:
        samples = promtext.scrape(a.url)
        got = collections.Counter()
        got_route = collections.Counter()
        got_s = collections.Counter()
        src_ms = collections.Counter()
        bad_labels = []
        for n, l, v in samples:
            route = "%s/%s" % (l.get("resource_namespace"),
                               l.get("resource_name"))
            if n == CONTRACT_COUNT:
                got[(route, l.get("response_code_family") or
                     "aborted")] += int(v)
                for k in ("resource_name", "resource_namespace",
                          "resource_uid"):
                    if not l.get(k):
                        bad_labels.append((n, l))
                if l.get("gateway_name") != "gw" or \
                        not l.get("upstream_cluster", "").startswith(
                            "httproute/" + route + "/rule/"):
                    bad_labels.append((n, l))
            elif n == CONTRACT_LAT + "_count":
                got_route[route] += int(v)
                if not l.get("resource_uid"):
                    bad_labels.append((n, l))
            elif n == CONTRACT_LAT + "_sum":
                got_s[route] += v
            elif n == UP_TIME + "_sum":
                # the contract observes every exchange, aborted ones too
                # (its count matched the log's, which logs them as 499/502)
                src_ms[agent_key(l)[0]] += v
        if (got == +want and got_route == +want_route) or \
                time.monotonic() > deadline:
            break
        time.sleep(0.3)
    bad = show("%s by (route, response_code_family)" % CONTRACT_COUNT,
               collections.Counter({(k[0], None, k[1]): v
                                    for k, v in want.items()}),
               collections.Counter({(k[0], None, k[1]): v
                                    for k, v in got.items()}))
    print("%s_count by route:" % CONTRACT_LAT)
    for r in sorted(set(want_route) | set(got_route)):
        mark = "" if want_route[r] == got_route[r] else "   <-- differs"
        bad += want_route[r] != got_route[r]
        print("  %-28s log %8d agent %8d%s" % (r, want_route[r],
                                               got_route[r], mark))
    stall = steal_bound_ms(a)
    print("%s_sum (s) vs the source histogram (ms) and the log (ms):"
          % CONTRACT_LAT)
    for r in sorted(set(want_ms) | set(got_s)):
        s_ms = got_s[r] * 1000.0
        # the policy divides each observation by 1000.0: the sum must be
        # the source's sum / 1000 up to float rounding
        ok_src = abs(s_ms - src_ms[r]) <= 1e-6 * max(1.0, src_ms[r]) + 1e-3
        bound = 0.05 * want_ms[r] + a.slack_ms * want_route[r] + 3.0 + \
            stall
        ok_log = abs(s_ms - want_ms[r]) <= bound
        bad += not ok_src or not ok_log
        print("  %-28s target %10.3f ms  source %10.3f ms  log %10.1f ms"
              " (bound %.1f)%s" % (r, s_ms, src_ms[r], want_ms[r], bound,
                                   "" if ok_src and ok_log
                                   else "   <-- differs"))
    for n, l in bad_labels[:10]:
        print("bad or missing labels on %s: %s" % (n, l))
    bad += len(bad_labels)
    if bad:
        print("MISMATCH (log %s, metrics %s)" % (a.log, a.url))
        return 1
    print("contract metrics match the access log")
    return 0


def cmd_get(a):
    match = dict(kv.split("=", 1) for kv in a.labels)
    v = promtext.total(promtext.scrape(a.url), a.metric, **match)
    print(int(v) if v.is_integer() else repr(v))
    return 0


def cmd_logcount(a):
    recs = read_log(a.log, a.format)
    n = sum(1 for r in recs if a.route is None or r.route == a.route)
    print(n)
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("--url", required=True)
    c.add_argument("--log", required=True)
    c.add_argument("--format", default="nginx",
                   choices=("nginx", "haproxy"))
    c.add_argument("--fields")
    c.add_argument("--timeout", type=float, default=20)
    c.add_argument("--settle", type=float, default=4)
    c.add_argument("--merge", action="append", default=[],
                   help="routes counted as one, e.g. apps/new,unmatched;"
                   " '*' merges every route")
    c.add_argument("--strict-latency", action="append", default=[],
                   help="route whose latency sum must be within 5 %%")
    c.add_argument("--slack-ms", type=float, default=1.5)
    c.add_argument("--ignore-unrouted", action="store_true",
                   help="skip log lines without a route (bad requests)")
    c.add_argument("--route-only", action="store_true")
    c.add_argument("--no-upstream", action="store_true")
    c.add_argument("--no-latency", action="store_true")
    c.add_argument("--latency-info", action="store_true",
                   help="print the latency comparison, do not assert it")
    c.add_argument("--expect-total", type=int)
    q = sub.add_parser("promql")
    q.add_argument("--prom", required=True)
    q.add_argument("--log", required=True)
    q.add_argument("--timeout", type=float, default=30)
    k = sub.add_parser("contract")
    k.add_argument("--url", required=True)
    k.add_argument("--log", required=True)
    k.add_argument("--timeout", type=float, default=20)
    k.add_argument("--slack-ms", type=float, default=1.5)
    for x in (c, k):
        x.add_argument("--steal-base",
                       default=os.environ.get("MM_IT_STEAL_BASE"),
                       help="steal-mark's file (default $MM_IT_STEAL_BASE):"
                       " latency bounds allow the machine's steal since")
    g = sub.add_parser("get")
    g.add_argument("--url", required=True)
    g.add_argument("metric")
    g.add_argument("labels", nargs="*")
    lc = sub.add_parser("logcount")
    lc.add_argument("--log", required=True)
    lc.add_argument("--format", default="nginx")
    lc.add_argument("route", nargs="?")
    sm = sub.add_parser("steal-mark")
    sm.add_argument("file")
    a = p.parse_args()
    return {"compare": cmd_compare, "get": cmd_get, "promql": cmd_promql,
            "contract": cmd_contract, "steal-mark": cmd_steal_mark,
            "logcount": cmd_logcount}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
