#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The include graph of the product code, and the directions it may take.

Reads every tracked .c/.h/.cc file's `#include "..."` lines (resolved from
the tree's root, as -I. does, or from the file's own folder) and
`#include <...>` lines for libbpf, and checks:

  * no cycle between folders (a folder depends on another when one of its
    files includes one of the other's);
  * each folder includes only from the folders its layer allows (LAYERS:
    lower layers never reach up);
  * nothing outside agent/, selftests/ and bpf/ reaches libbpf (<bpf/...>
    headers or a generated *.skel.h): policy/ and exporter/ are unit-tested
    without root; nor does anything in the agent's folders the Makefile
    links into the unit tests (AGENT_PURE_DIRS) or in agent/k8s/;
  * no product file includes selftests/.

Prints "ok   RULE" or "FAIL RULE" with the offending includes (file:line),
then "N passed, N failed"; exits 1 on any failure.

  check_includes.py [--graph]   --graph also prints folder -> folders
"""
import collections
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Folder prefix -> the folder prefixes it may include from (besides itself).
# Order: lowest layer first. A folder not listed falls under its parent.
LAYERS = [
    ("vmlinux", []),
    ("bpf", ["vmlinux"]),
    # bpf/milometer.h (the kernel ABI) and bpf/fnv1a.h (the route hash) are
    # the two headers user space shares with the kernel side
    ("policy/util", []),
    ("policy/model", ["bpf/fnv1a.h", "policy/util"]),
    ("policy/regex", []),
    ("policy/source", ["bpf/fnv1a.h", "policy/model", "policy/util"]),
    ("policy/cel", ["policy/model", "policy/regex", "policy/source", "policy/util"]),
    ("policy/gateway", ["bpf/milometer.h", "bpf/fnv1a.h", "policy/model",
                        "policy/regex", "policy/source", "policy/util"]),
    ("policy/contract", ["bpf/fnv1a.h", "policy/cel", "policy/gateway",
                         "policy/model", "policy/regex", "policy/source",
                         "policy/util"]),
    # `translate`: the contract compiled for other stacks
    # (in the exporter's naming: prom_names, prom_text)
    ("policy/translate", ["bpf/fnv1a.h", "exporter", "policy/cel", "policy/contract",
                          "policy/model", "policy/regex", "policy/source",
                          "policy/util"]),
    ("policy", ["bpf/milometer.h", "bpf/fnv1a.h", "policy"]),
    ("exporter", ["bpf/milometer.h", "policy/model", "policy/util"]),
    ("agent/config", ["policy/source", "policy/util"]),
    ("agent/h2", ["bpf/milometer.h"]),
    ("agent/tls", []),
    ("agent/node", ["agent/config", "policy/util"]),
    # the API client, nothing else
    ("agent/k8s", ["policy/source", "policy/util"]),
    # who may read /metrics: TokenReview / SubjectAccessReview over the client
    ("agent/authz", ["agent/k8s", "bpf/fnv1a.h", "exporter", "policy"]),
    # the series the agent and the controller expose about themselves
    ("agent/metrics", ["agent/k8s", "exporter/metric_doc.h", "policy"]),
    ("agent/pipeline", ["agent/config", "agent/h2", "bpf/milometer.h", "bpf/fnv1a.h",
                        "exporter/metric_doc.h", "policy"]),
    ("agent/controller", ["agent/authz", "agent/config", "agent/k8s", "agent/metrics",
                          "bpf/fnv1a.h", "exporter", "policy"]),
    # `milometer run`: lifecycle, loader, ring buffer, debug socket, self-metrics
    ("agent", ["agent/authz", "agent/config", "agent/h2", "agent/k8s", "agent/metrics",
               "agent/node", "agent/pipeline", "agent/tls", "bpf", "exporter", "policy"]),
    # the subcommands' getopt fronts: the top of the graph
    ("agent/cmd", ["agent", "bpf/milometer.h", "exporter", "policy"]),
    ("selftests", [""]),
]
LIBBPF_OK = ("agent", "bpf", "selftests")


def libbpf_free_dirs():
    """The agent's folders the Makefile links into the unit tests."""
    if os.path.exists("Makefile"):
        with open("Makefile") as mk:
            for line in mk:
                m = re.match(r"AGENT_PURE_DIRS\s*:=(.*)", line)
                if m:
                    return tuple(d + "/" for d in m.group(1).split()) + ("agent/k8s/",)
    return ("agent/k8s/",)
INCLUDE = re.compile(r'\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of(path):
    best = None
    for prefix, allowed in LAYERS:
        if path == prefix or path.startswith(prefix + "/"):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, allowed)
    return best


def allowed(src, target):
    layer = layer_of(src)
    if layer is None:
        return True
    prefix, ok = layer
    # its own layer; a sub-folder with a layer of its own is another layer
    if layer_of(target) is not None and layer_of(target)[0] == prefix:
        return True
    return any(a == "" or target == a or target.startswith(a + "/") for a in ok)


def main():
    os.chdir(ROOT)
    files = subprocess.check_output(
        ["git", "ls-files", "*.c", "*.h", "*.cc"]).decode().split()
    edges = collections.defaultdict(list)  # folder -> [(target folder, where)]
    wrong_dir, libbpf, selftests = [], [], []
    pure = libbpf_free_dirs()
    for f in files:
        d = os.path.dirname(f)
        with open(f, errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                kind, inc = m.groups()
                where = "%s:%d: #include %s%s%s" % (
                    f, n, kind, inc, '"' if kind == '"' else ">")
                if kind == "<" or inc.endswith(".skel.h"):
                    if (inc.startswith("bpf/") or inc.endswith(".skel.h")) and \
                            (not f.startswith(LIBBPF_OK) or f.startswith(pure)):
                        libbpf.append(where)
                    if kind == "<":
                        continue
                target = next((c for c in (inc, os.path.normpath(os.path.join(d, inc)))
                               if os.path.exists(c)), None)
                if target is None:
                    continue  # generated (.output/) or system header
                if target.startswith("selftests/") and not f.startswith("selftests/"):
                    selftests.append(where)
                if not allowed(f, target):
                    wrong_dir.append(where)
                td = os.path.dirname(target)
                if td != d:
                    edges[d].append((td, where))

    graph = {a: sorted({t for t, _ in v}) for a, v in edges.items()}
    if "--graph" in sys.argv:
        for a in sorted(graph):
            if not a.startswith("selftests"):
                print("  %s -> %s" % (a, ", ".join(graph[a])))

    def path(a, b, seen):
        for n in graph.get(a, ()):
            if n == b:
                return [a, b]
            if n not in seen:
                seen.add(n)
                p = path(n, b, seen)
                if p:
                    return [a] + p
        return None

    cycles = []
    for a in sorted(graph):
        for b in graph[a]:
            p = path(b, a, set())
            if p:
                why = [w for t, w in edges[a] if t == b][:1]
                cycles.append("%s (%s)" % (" -> ".join([a] + p), why[0]))

    results = [
        ("no cycle between folders", cycles),
        ("every include goes down a layer (LAYERS)", wrong_dir),
        ("only agent/, bpf/ and selftests/ reach libbpf, and not AGENT_PURE_DIRS",
         libbpf),
        ("no product file includes selftests/", selftests),
    ]
    failed = 0
    for name, bad in results:
        print("%s %s" % ("FAIL" if bad else "ok  ", name))
        for b in bad:
            print("    " + b)
        failed += bool(bad)
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
