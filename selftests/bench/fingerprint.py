#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The hardware fingerprint of a bench run: CPU model, CPUs, kernel,
microcode (when /proc/cpuinfo shows it) and every
/sys/devices/system/cpu/vulnerabilities/* line. A floor measured under
retpolines and Safe-RET does not carry over to a host with Enhanced IBRS,
so runs are compared only when these lines are the same (report.py).

Usage: fingerprint.py OUT.json   prints the lines, writes them as JSON
       fingerprint.py --diff A.json B.json   the lines that differ
"""
import glob
import json
import os
import platform
import sys

VULN = "/sys/devices/system/cpu/vulnerabilities"


def cpuinfo(key):
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k.strip() == key:
                    return v.strip()
    except OSError:
        pass
    return None


def collect():
    fp = {
        "cpu_model": cpuinfo("model name") or platform.processor() or "?",
        "nproc": str(os.cpu_count()),
        "kernel": platform.release(),
    }
    mc = cpuinfo("microcode")
    if mc:
        fp["microcode"] = mc
    for p in sorted(glob.glob(VULN + "/*")):
        try:
            with open(p) as f:
                fp["vulnerabilities/" + os.path.basename(p)] = f.read().strip()
        except OSError as e:
            fp["vulnerabilities/" + os.path.basename(p)] = "unreadable: %s" % e
    return fp


def diff(a, b):
    """Lines of fingerprint a and b that differ, as human sentences."""
    out = []
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            out.append("%s: %r here, %r there" %
                       (k, b.get(k, "(absent)"), a.get(k, "(absent)")))
    return out


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--diff":
        with open(sys.argv[2]) as f:
            a = json.load(f).get("fingerprint", {})
        with open(sys.argv[3]) as f:
            b = json.load(f).get("fingerprint", {})
        d = diff(a, b)
        print("\n".join(d))
        return 1 if d else 0
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    fp = collect()
    for k, v in fp.items():
        print("   %s: %s" % (k, v))
    with open(sys.argv[1], "w") as f:
        json.dump(fp, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
