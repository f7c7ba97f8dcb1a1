#!/usr/bin/env python3
"""Print per-route request counts from the agent's /metrics (stdin) next to
the counts in the gateway's access log (argv[1], gen_nginx format)."""
import collections
import re
import sys

agent = collections.Counter()
lat = collections.defaultdict(float)
line_re = re.compile(r'^(\w+)\{(.*)\} (\S+)$')
for line in sys.stdin:
    m = line_re.match(line.strip())
    if not m:
        continue
    name, labels, value = m.groups()
    lab = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels))
    route = lab.get("envoy_cluster_name") or lab.get("k8s_httproute_name", "?")
    key = (route, lab.get("http_response_status_code_class", lab.get("http_response_status_code", "")))
    if name == "envoy_http_downstream_rq_total":
        agent[key] += float(value)
    elif name == "envoy_http_downstream_rq_time_sum":
        lat[key] += float(value)

log = collections.Counter()
with open(sys.argv[1]) as f:
    for line in f:
        cols = line.rstrip("\n").split("\t")
        if len(cols) < 2:
            continue
        route = cols[0]
        if route.count(" ") == 2:  # "NS/NAME rule N" -> Envoy cluster name
            nsname, _, rule = route.split(" ")
            route = "httproute/%s/rule/%s" % (nsname, rule)
        status = cols[1]
        log[(route, status[0] + "xx" if status.isdigit() else status)] += 1

print("   %-34s %-6s %8s %8s %12s" % ("route (cluster)", "class", "agent", "log", "mean ms"))
for key in sorted(set(agent) | set(log)):
    n = agent[key]
    print("   %-34s %-6s %8d %8d %12.3f" % (key[0], key[1], n, log[key],
                                            lat[key] / n if n else 0))
