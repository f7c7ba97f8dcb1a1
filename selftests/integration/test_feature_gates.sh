#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Feature gates (KEP-3920): the config file's featureGates and
# --feature-gates (flags win) set the gates; `milometer ctl features`, the
# milometer_feature_enabled gauges and the startup log report them; a
# SIGHUP re-reads featureGates and turns a gate off at run time; an
# unknown gate stops the agent with a message naming the known ones.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer

# an unknown gate: exit 2 before anything is loaded, naming the known gates
if "$BIN/milometer" run --proxy-exe x --feature-gates 'TLSCapture=true,Nope=true' \
	>"$T/bad.out" 2>&1; then
	fail "an unknown feature gate was accepted"
fi
grep -q 'unrecognized feature gate "Nope" (known gates: TLSCapture, HTTP2)' "$T/bad.out" ||
	fail "unknown-gate message: $(cat "$T/bad.out")"

use_manifests base
cat >"$T/config.yaml" <<CFG
featureGates:
  HTTP2: true
  TLSCapture: false
CFG
# the flag overrides the file for TLSCapture
start_agent --config "$T/config.yaml" --feature-gates ' TLSCapture = TRUE '
grep -q 'feature gates: TLSCapture=true(ALPHA),HTTP2=true(ALPHA)' "$T/agent.out" ||
	fail "startup log: $(grep 'feature' "$T/agent.out")"
ctl features | tee "$T/features.txt"
grep -Eq '^TLSCapture +ALPHA +false +true ' "$T/features.txt" || fail "ctl features: TLSCapture"
grep -Eq '^HTTP2 +ALPHA +false +true ' "$T/features.txt" || fail "ctl features: HTTP2"
ctl --json features | $PY -c '
import json, sys
g = {x["name"]: x for x in json.load(sys.stdin)}
assert g["TLSCapture"]["enabled"] is True and g["TLSCapture"]["stage"] == "ALPHA", g
assert g["HTTP2"]["enabled"] is True and g["HTTP2"]["default"] is False, g
' || fail "ctl --json features"

gauge() { metrics | grep -E "^milometer_feature_enabled\{name=\"$1\",stage=\"ALPHA\"\} $2\$"; }
wait_for 20 gauge TLSCapture 1 || fail "gauge TLSCapture=1: $(metrics | grep feature)"
gauge HTTP2 1 >/dev/null || fail "gauge HTTP2=1: $(metrics | grep feature)"

# reload: HTTP2 off in the file, TLSCapture stays as the flag says
sed -i 's/HTTP2: true/HTTP2: false/' "$T/config.yaml"
kill -HUP "$AGENT_PID"
h2_off() { ctl features | grep -Eq '^HTTP2 +ALPHA +false +false '; }
wait_for 20 h2_off || fail "SIGHUP did not turn HTTP2 off: $(ctl features)"
wait_for 20 gauge HTTP2 0 || fail "gauge HTTP2=0 after reload: $(metrics | grep feature)"
gauge TLSCapture 1 >/dev/null || fail "the flag's TLSCapture=true was lost on reload"
# a broken reload keeps the gates as they are
printf 'featureGates:\n  Typo: true\n' >"$T/config.yaml"
kill -HUP "$AGENT_PID"
wait_for 20 grep -q 'feature gates unchanged: .*Typo' "$T/agent.out" ||
	fail "a bad featureGates reload was not reported"
ctl features | grep -Eq '^TLSCapture +ALPHA +false +true ' || fail "bad reload changed gates"
stop_agent
log "feature gates ok"
