#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Run time and run count of the agent's BPF programs (bpf_stats).

  bpf_stats.py list          "ID NAME" of every mm_* (the agent's) and fl_*
                             (bin/bench_floor's) program loaded now
  bpf_stats.py ids BEFORE    "ID NAME" of those programs loaded now that
                             were not in BEFORE (a list): the agent just
                             started, not another one (pins are shared)
  bpf_stats.py snap IDS      JSON {name: [run_time_ns, run_cnt]} now
  bpf_stats.py conn MAP      "value_bytes N btf_struct NAME SIZE" of the
                             loaded map MAP (the per-connection state):
                             the size from the map and from its BTF

run_time_ns/run_cnt only grow while kernel.bpf_stats_enabled=1; the bench
takes the difference of two snapshots around a round.
"""
import json
import subprocess
import sys


def bpftool(*args):
    out = subprocess.run(["bpftool", "-j", *args], capture_output=True,
                         text=True)
    if out.returncode:
        return None
    return json.loads(out.stdout)


def loaded():
    return {p["id"]: p["name"] for p in bpftool("prog", "show") or []
            if p.get("name", "").startswith(("mm_", "fl_"))}


def read_ids(path):
    out = {}
    with open(path) as f:
        for line in f:
            pid, name = line.split()
            out[int(pid)] = name
    return out


def ids(before):
    old = read_ids(before) if before else {}
    new = {i: n for i, n in loaded().items() if i not in old}
    for i, n in sorted(new.items()):
        print(i, n)
    return 0 if new else 1


def snap(ids_file):
    want = read_ids(ids_file)
    out = {}
    for p in bpftool("prog", "show") or []:
        name = want.get(p.get("id"))
        if name is None:
            continue
        t, c = out.get(name, [0, 0])
        out[name] = [t + p.get("run_time_ns", 0), c + p.get("run_cnt", 0)]
    json.dump(out, sys.stdout)
    return 0


def conn(map_name):
    maps = [m for m in bpftool("map", "show") or []
            if m.get("name") == map_name]
    if not maps:
        return 1
    m = maps[-1]
    size = m.get("bytes_value", 0)
    line = "value_bytes %d" % size
    btf = bpftool("btf", "dump", "id", str(m.get("btf_id", 0))) or {}
    types = {t["id"]: t for t in btf.get("types", [])}
    # bpftool does not print the map's value type id: take struct mm_conn
    t = next((t for t in types.values() if t.get("kind") == "STRUCT" and
              t.get("name") == "mm_conn"), None)
    if t:
        line += " btf_struct %s %d" % (t["name"], t.get("size", 0))
        # the largest members, for whoever shrinks it
        def msize(tid):
            x = types.get(tid)
            while x and "size" not in x and x.get("type_id"):
                if x.get("kind") == "PTR":
                    return 8
                if x.get("kind") == "ARRAY":
                    return x.get("nr_elems", 0) * msize(x["type_id"])
                x = types.get(x["type_id"])
            return x.get("size", 0) if x else 0
        mem = sorted(((msize(mb["type_id"]), mb["name"])
                      for mb in t.get("members", [])), reverse=True)[:5]
        line += " largest " + ",".join("%s:%d" % (n, z) for z, n in mem)
    print(line)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["conn"] and len(sys.argv) == 3:
        sys.exit(conn(sys.argv[2]))
    if sys.argv[1:2] == ["list"] and len(sys.argv) == 2:
        sys.exit(ids(None))
    if len(sys.argv) != 3 or sys.argv[1] not in ("ids", "snap"):
        sys.exit(__doc__)
    sys.exit(ids(sys.argv[2]) if sys.argv[1] == "ids" else snap(sys.argv[2]))
