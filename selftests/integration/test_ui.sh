#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The /ui page in headless Chromium (Debian's): served by the agent on its
# /metrics port, with no external asset; after real nginx traffic (wrk's
# mix, plus requests no rule matches) the table it renders holds, per rule
# and leg, the access log's requests and successes, and the charts are
# drawn. A screenshot is kept in the test log dir (MM_IT_LOG_DIR).
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
command -v chromium >/dev/null || fail "chromium missing: run deploy/install-deps.sh"
use_manifests base
start_backends
start_nginx
start_agent

curl -fsS "$AGENT_URL/ui" >"$T/ui.html" || fail "no /ui page"
grep -q '<table id="routes">' "$T/ui.html" || fail "/ui is not the page: $(head -5 "$T/ui.html")"
# nothing fetched from elsewhere: no src/href/url()/@import at all, and no
# URL but the SVG namespace's name
ext=$(grep -Eo '(https?://[^"]*|src=|href=|url\(|@import)' "$T/ui.html" |
	grep -vx 'http://www.w3.org/2000/svg' || true)
[ -z "$ext" ] || fail "/ui refers to external assets: $ext"
curl -fsS "$AGENT_URL/ui/top.json" | $PY -c 'import json,sys; d=json.load(sys.stdin); assert "rows" in d and "history" in d, d' ||
	fail "/ui/top.json is not the view"

# a viewer with the page open before and while load runs: history for the
# charts, and a window whose start precedes every request
wrk -t2 -c4 -d4s -s "$IT_DIR/wrk_mix.lua" "http://127.0.0.1:$PROXY_PORT/" >/dev/null &
wrk_pid=$!
while kill -0 $wrk_pid 2>/dev/null; do
	curl -fsS -o /dev/null "$AGENT_URL/ui/top.json" || fail "/ui/top.json failed under load"
	sleep 1 # the page polls once a second
done
wait $wrk_pid
for i in $(seq 5); do px nohost.test /x >/dev/null; done
compare_log --no-latency

chrome() {
	timeout 90 chromium --headless --no-sandbox --disable-gpu \
		--user-data-dir="$T/chromium" --virtual-time-budget=4000 "$@" \
		"$AGENT_URL/ui" 2>>"$T/chromium.err"
}
chrome --dump-dom >"$T/ui.dom.html" || fail "chromium failed: $(tail -5 "$T/chromium.err")"
$PY "$IT_DIR/topcheck.py" dom --dom "$T/ui.dom.html" --out "$T/ui.rows.json" ||
	fail "the page rendered no table: $(grep -o 'id="status">[^<]*' "$T/ui.dom.html")"
$PY "$IT_DIR/topcheck.py" counts --top "$T/ui.rows.json" --log "$NGINX_LOG" ||
	fail "the page's numbers differ from the access log"
grep -q 'data-key="unmatched|-|downstream"' "$T/ui.dom.html" || fail "no unmatched row on the page"
grep -Eq '<svg id="rps"[^>]*>.*<path d="M[0-9.]+ [0-9.]+L' "$T/ui.dom.html" ||
	fail "the requests-per-second chart has no line"
shot=${MM_IT_LOG_DIR:-$T}/test_ui.png
chrome --window-size=1300,900 --screenshot="$shot" >/dev/null || fail "no screenshot: $(tail -5 "$T/chromium.err")"
[ "$(head -c 8 "$shot" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "the screenshot is not a PNG"
log "screenshot: $shot ($(stat -c %s "$shot") bytes)"
