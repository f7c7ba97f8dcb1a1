#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The agent's HTTP/2 decoder (agent/h2/) against real clients and
# real servers: curl (prior knowledge and the h2c Upgrade), nghttp (20
# streams on one connection), h2load (many concurrent streams, many distinct
# paths) talk to Debian's nghttpx (h2c and HTTP/1.1 Upgrade frontend; nghttpd
# alone refuses the Upgrade) in front of nghttpd, through a relay that
# records each connection's bytes as the kernel cut them; bin/h2_decode
# decodes the recordings. Every exchange the clients report and nghttpx
# logs must be there with its path, authority and status, nothing unknown,
# nothing aborted. No BPF is loaded: the lock is for the fixed ports.
. "$(dirname "$0")/lib.sh"
need_bin h2_decode
for b in nghttpd nghttpx nghttp h2load curl; do
	command -v $b >/dev/null ||
		fail "$b missing: apt-get install nghttp2-server nghttp2-proxy nghttp2-client curl"
done
port_free $PROXY_PORT $PY_PORT $STATIC_PORT
DOC=$T/doc
mkdir -p "$DOC/api" "$T/cap"
echo hello >"$DOC/a.txt"
echo '<html>index</html>' >"$DOC/index.html"
head -c 1048576 /dev/zero >"$DOC/big.bin"
for i in $(seq 0 199); do echo "item $i" >"$DOC/api/item-$i"; done
start_bg nghttpd nghttpd --no-tls --address=127.0.0.1 -d "$DOC" $PY_PORT
wait_for 10 listening $PY_PORT || fail "nghttpd did not start: $(cat "$T/nghttpd.out")"
start_bg nghttpx nghttpx --conf=/dev/null --workers=1 \
	--frontend="127.0.0.1,$STATIC_PORT;no-tls" \
	--backend="127.0.0.1,$PY_PORT;;proto=h2" \
	--accesslog-file="$T/access.log" --accesslog-format='$path $status' \
	--errorlog-file="$T/nghttpx.err"
wait_for 10 listening $STATIC_PORT || fail "nghttpx did not start: $(cat "$T/nghttpx.out" "$T/nghttpx.err")"
start_bg relay $PY "$IT_DIR/h2relay.py" $PROXY_PORT $STATIC_PORT "$T/cap"
wait_for 10 listening $PROXY_PORT || fail "relay did not start: $(cat "$T/relay.out")"
U=http://127.0.0.1:$PROXY_PORT

: >"$T/expect.txt" # path status, one line per request the clients made
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
c=$(code --http2-prior-knowledge "$U/a.txt"); echo "/a.txt $c" >>"$T/expect.txt"
c=$(code --http2-prior-knowledge "$U/missing"); echo "/missing $c" >>"$T/expect.txt"
c=$(code --http2-prior-knowledge "$U/big.bin"); echo "/big.bin $c" >>"$T/expect.txt"
# h2c upgrade: curl asks with Upgrade: h2c, nghttpd answers 101
v=$(curl -s -o /dev/null -w '%{http_code} %{http_version}' --http2 "$U/index.html")
[ "$v" = "200 2" ] || fail "curl --http2 did not upgrade to h2c: $v"
echo "/index.html 200" >>"$T/expect.txt"
nghttp -n -m 20 "$U/a.txt" >"$T/nghttp.out" 2>&1 || fail "nghttp: $(tail -3 "$T/nghttp.out")"
for i in $(seq 20); do echo "/a.txt 200" >>"$T/expect.txt"; done
h2load -n 2000 -c 4 -m 50 "$U/api/item-7" >"$T/h2load1.out" 2>&1
grep -q 'status codes: 2000 2xx' "$T/h2load1.out" || fail "h2load: $(grep -E 'requests|status' "$T/h2load1.out")"
for i in $(seq 2000); do echo "/api/item-7 200" >>"$T/expect.txt"; done
# many distinct paths (and some 404s) over 2 connections: h2load -i takes
# the URIs in turn, so each is asked n/len times
for i in $(seq 0 249); do echo "$U/api/item-$i"; done >"$T/uris.txt"
h2load -n 1000 -c 2 -m 10 -i "$T/uris.txt" >"$T/h2load2.out" 2>&1
grep -q 'status codes: 800 2xx, 0 3xx, 200 4xx' "$T/h2load2.out" ||
	fail "h2load -i: $(grep -E 'requests|status' "$T/h2load2.out")"
for r in 1 2 3 4; do
	for i in $(seq 0 249); do
		[ $i -lt 200 ] && s=200 || s=404
		echo "/api/item-$i $s"
	done
done >>"$T/expect.txt"

# every recorded connection complete (the relay saw both sides close)
complete() {
	local f
	for f in "$T"/cap/conn-*.cap; do tail -c 40 "$f" | grep -aqE 'x [0-9]+ 0$' || return 1; done
}
wait_for 20 complete || fail "the relay did not see every connection close"
log "connections recorded: $(ls "$T"/cap | wc -l)"
"$BIN/h2_decode" "$T"/cap/conn-*.cap >"$T/decoded.txt" || fail "h2_decode failed"
tail -1 "$T/decoded.txt"
$PY - "$T/decoded.txt" "$T/expect.txt" <<'PY' || fail "decoded exchanges differ from what the clients did"
import collections, re, sys
got = collections.Counter()
summary = {}
bad = []
for line in open(sys.argv[1]):
    kv = dict(x.split("=", 1) for x in line.split() if "=" in x)
    if line.startswith("summary"):
        summary = kv
        continue
    if not kv["authority"].startswith("127.0.0.1:"):
        bad.append(line)
    if kv["unknown"] != "0x0" or kv["flags"] != "0x0" or kv["method"] != "GET":
        bad.append(line)
    if kv["path"] == "/big.bin" and int(kv["resp_bytes"]) < 1048576:
        bad.append("big.bin response too small: " + line)
    got[(kv["path"], kv["status"])] += 1
want = collections.Counter(tuple(l.split()) for l in open(sys.argv[2]))
for k in sorted(set(got) | set(want)):
    if got[k] != want[k]:
        bad.append("%s %s: decoded %d, clients made %d" % (k[0], k[1], got[k], want[k]))
for k in ("unknown_fields", "hpack_errors", "aborted", "untracked"):
    if summary.get(k) != "0":
        bad.append("summary %s=%s" % (k, summary.get(k)))
print("decoded %d exchanges, %d distinct (path, status); %s ns/exchange" %
      (sum(got.values()), len(got), summary.get("decode_ns_per_exchange")))
if bad:
    print("\n".join(bad[:20]))
    sys.exit(1)
PY
log "h2 decoder agrees with curl, nghttp, h2load and nghttpd"
