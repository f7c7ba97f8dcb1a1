#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The metrics reference is the binary's: docs/metrics.md equals what
# `milometer metrics-reference` prints, and a running agent (real nginx,
# real traffic) exposes exactly the families the reference lists: every
# family on /metrics is in it with the same type, and every family it lists
# without an "Exposed ..." condition is on /metrics.
. "$(dirname "$0")/lib.sh"
need_bin milometer gen_nginx
"$BIN/milometer" metrics-reference >"$T/reference.md"
diff -u "$ROOT/docs/metrics.md" "$T/reference.md" >"$T/reference.diff" ||
	fail "docs/metrics.md is not what the binary registers: run \`bin/milometer metrics-reference >docs/metrics.md\`; $(head -20 "$T/reference.diff")"
log "docs/metrics.md equals \`milometer metrics-reference\`"

need_root
# base has no MetricDefinitions: every family is one of the binary's own
use_manifests base
start_backends
start_nginx
start_agent
wrk -t2 -c4 -d2s -s "$IT_DIR/wrk_mix.lua" "http://127.0.0.1:$PROXY_PORT/" >/dev/null
compare_log --no-latency
metrics >"$T/metrics.txt"
$PY - "$T/reference.md" "$T/metrics.txt" <<'PYEOF'
import re, sys
ref, exposed = {}, {}
for line in open(sys.argv[1]):
    m = re.match(r"\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \| (\w+) \|.*\|(.*)\|$", line)
    if m:
        ref[m.group(1)] = (m.group(2), " Exposed " in m.group(3))
for line in open(sys.argv[2]):
    m = re.match(r"# TYPE (\S+) (\S+)$", line)
    if m:
        # text 0.0.4 names a counter's family with its _total
        exposed[m.group(1)] = m.group(2)
bad = []
for name, typ in sorted(exposed.items()):
    if name not in ref:
        bad.append("on /metrics, not in the reference: %s (%s)" % (name, typ))
    elif ref[name][0] != typ:
        bad.append("%s: /metrics says %s, the reference %s" % (name, typ, ref[name][0]))
for name, (typ, conditional) in sorted(ref.items()):
    if not conditional and name not in exposed:
        bad.append("in the reference (unconditional), not on /metrics: %s" % name)
print("%d families on /metrics, %d in the reference (%d conditional)" %
      (len(exposed), len(ref), sum(1 for t, c in ref.values() if c)))
for b in bad:
    print("  " + b)
sys.exit(1 if bad or len(exposed) < 20 else 0)
PYEOF
[ $? -eq 0 ] || fail "/metrics and the reference differ (above)"
