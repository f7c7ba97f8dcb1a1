#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# TLS library discovery (agent/tls/) on real processes:
#  - Debian's nginx terminating TLS (h2 + HTTP/1.1, a CA and certificate made
#    here): discovery finds libssl.so.3 in a worker through
#    /proc/PID/map_files (root) or /proc/PID/root, the file it maps,
#    and every offset equals the one computed from `nm -D` and the segments
#    `readelf -l` lists (st_value - p_vaddr + p_offset);
#  - a server linked statically against libssl.a: SSL_* found in the
#    executable's own .symtab (the Envoy-with-symbols case), offsets equal
#    `nm`'s + segments;
#  - Debian's caddy (Go crypto/tls, stripped: names only in .gopclntab)
#    serving TLS with HTTP/3 off: (*Conn).Read/Write entries start with Go's
#    stack-check prologue and their RET offsets are exactly the `ret`s
#    objdump lists in each function;
#  - a process with no TLS library: nothing found.
# kTLS: the probe's answer is printed; the 6.18 test kernel has no CONFIG_TLS.
# No BPF is loaded: the lock is for the fixed port.
. "$(dirname "$0")/lib.sh"
need_bin tls_discover
port_free $PROXY_PORT
LIBSSL=/usr/lib/x86_64-linux-gnu/libssl.so.3

# offsets NAME FILE: the file offsets of NAME's functions, from binutils
offsets() {
	$PY - "$@" <<'PY'
import re, subprocess, sys
f = sys.argv[1]
segs = []
for l in subprocess.run(["readelf", "-lW", f], capture_output=True, text=True).stdout.splitlines():
    m = re.match(r"\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)", l)
    if m:
        segs.append(tuple(int(x, 16) for x in m.groups()))
nm = subprocess.run(["nm", "--defined-only"] + (["-D"] if sys.argv[2] == "dyn" else []) + [f],
                    capture_output=True, text=True).stdout
for name in ("SSL_read", "SSL_write", "SSL_read_ex", "SSL_write_ex", "SSL_do_handshake",
             "SSL_set_fd", "SSL_shutdown", "SSL_free"):
    m = re.search(r"^([0-9a-f]+) T %s(@@\S+)?$" % name, nm, re.M)
    if not m:
        print("%s=-" % name)
        continue
    va = int(m.group(1), 16)
    off = [va - v + o for o, v, fsz in segs if v <= va < v + fsz]
    print("%s=0x%x" % (name, off[0]))
PY
}

# --- nginx with TLS ---
mkdir -p "$T/nginx/logs" "$T/pki"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-keyout "$T/pki/k.pem" -out "$T/pki/c.pem" -subj /CN=gw.test \
	-addext subjectAltName=DNS:gw.test 2>/dev/null
cat >"$T/nginx/nginx.conf" <<CONF
user root;
worker_processes 2;
pid $T/nginx/nginx.pid;
events {}
http {
    access_log off;
    server {
        listen 127.0.0.1:$PROXY_PORT ssl http2;
        ssl_certificate $T/pki/c.pem;
        ssl_certificate_key $T/pki/k.pem;
        location / { return 200 "tls ok\n"; }
    }
}
CONF
cp /usr/sbin/nginx "$T/mm-it-nginx"
start_bg nginx "$T/mm-it-nginx" -p "$T/nginx/" -e "$T/nginx/error.log" \
	-c "$T/nginx/nginx.conf" -g 'daemon off;'
NGINX_PID=$LAST_PID
wait_for 10 listening $PROXY_PORT || fail "nginx did not start: $(cat "$T/nginx/error.log")"
body=$(curl -fsS --http2 --cacert "$T/pki/c.pem" --resolve gw.test:$PROXY_PORT:127.0.0.1 \
	"https://gw.test:$PROXY_PORT/")
[ "$body" = "tls ok" ] || fail "nginx over TLS answered: $body"
worker=$(pgrep -P "$NGINX_PID" | head -1)
[ -n "$worker" ] || fail "no nginx worker"
"$BIN/tls_discover" "$worker" | tee "$T/nginx.disc"
grep -q '^ktls=' "$T/nginx.disc" || fail "no kTLS verdict"
line=$(grep -E "^pid=$worker lib=openssl-3 path=/proc/$worker/(map_files/[0-9a-f]+-[0-9a-f]+|root$LIBSSL) mapped=[^ ]*$LIBSSL " "$T/nginx.disc") ||
	fail "libssl.so.3 not found in nginx worker $worker"
for kv in $(offsets "$LIBSSL" dyn); do
	case " $line " in *" $kv "*) ;; *) fail "nginx: $kv expected, discovery said: $line" ;; esac
done
grep -q "^pid=$worker libraries=1\$" "$T/nginx.disc" || fail "more than libssl reported for nginx"

# --- a statically linked TLS server ---
cat >"$T/static.c" <<'C'
#include <openssl/ssl.h>
#include <stdio.h>
#include <unistd.h>
/* links SSL_read/SSL_write in; waits until the test is done with it */
int main(void)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	SSL *s = SSL_new(ctx);
	char c;
	if (read(0, &c, 1) < 0 || !s)
		return 1;
	SSL_set_fd(s, 0);
	if (c == 'x')
		return SSL_read(s, &c, 1) + SSL_write(s, &c, 1) + SSL_do_handshake(s) +
		       SSL_shutdown(s) + (SSL_read_ex(s, &c, 1, NULL) + SSL_write_ex(s, &c, 1, NULL));
	SSL_free(s);
	return 0;
}
C
cc -O1 -o "$T/mm-static-tls" "$T/static.c" /usr/lib/x86_64-linux-gnu/libssl.a \
	/usr/lib/x86_64-linux-gnu/libcrypto.a -lpthread 2>"$T/cc.err" ||
	fail "cannot build the static TLS server (libssl-dev): $(tail -3 "$T/cc.err")"
! ldd "$T/mm-static-tls" | grep -q libssl || fail "the static server links libssl dynamically"
mkfifo "$T/hold"
"$T/mm-static-tls" <"$T/hold" &
SPID=$!
BG_PIDS+=($SPID)
exec 7>"$T/hold" # keeps the server waiting
wait_for 5 grep -q mm-static-tls /proc/$SPID/maps || fail "static server did not start"
"$BIN/tls_discover" $SPID | tee "$T/static.disc"
line=$(grep "^pid=$SPID lib=static " "$T/static.disc") || fail "SSL_* not found in the static executable"
for kv in $(offsets "$T/mm-static-tls" symtab); do
	case " $line " in *" $kv "*) ;; *) fail "static: $kv expected, discovery said: $line" ;; esac
done
echo q >&7
exec 7>&-
wait $SPID || true

# --- Go: caddy ---
if command -v caddy >/dev/null; then
	stop_pid "$NGINX_PID"
	mkdir -p "$T/caddy"
	cat >"$T/caddy/Caddyfile" <<CADDY
{
	admin off
	skip_install_trust
	servers {
		protocols h1 h2
	}
}
https://gw.test:$PROXY_PORT {
	tls internal
	respond "go tls ok"
}
CADDY
	# a copy with its own name: leftovers are found by name
	cp /usr/bin/caddy "$T/mm-it-caddy"
	XDG_DATA_HOME=$T/caddy XDG_CONFIG_HOME=$T/caddy HOME=$T/caddy \
		start_bg caddy "$T/mm-it-caddy" run --config "$T/caddy/Caddyfile" --adapter caddyfile
	CPID=$LAST_PID
	wait_for 20 listening $PROXY_PORT || fail "caddy did not start: $(tail -5 "$T/caddy.out")"
	body=$(curl -fsSk --http2 --resolve gw.test:$PROXY_PORT:127.0.0.1 "https://gw.test:$PROXY_PORT/")
	[ "$body" = "go tls ok" ] || fail "caddy over TLS answered: $body"
	"$BIN/tls_discover" $CPID | tee "$T/caddy.disc"
	grep -q "^pid=$CPID go=1 magic=0xfffffff" "$T/caddy.disc" || fail "caddy not seen as Go"
	$PY - "$T/mm-it-caddy" "$T/caddy.disc" <<'PY' || fail "Go crypto/tls offsets differ from objdump"
import re, subprocess, sys
exe, disc = sys.argv[1], sys.argv[2]
segs = []
for l in subprocess.run(["readelf", "-lW", exe], capture_output=True, text=True).stdout.splitlines():
    m = re.match(r"\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)", l)
    if m:
        segs.append(tuple(int(x, 16) for x in m.groups()))
off = lambda va: [va - v + o for o, v, fsz in segs if v <= va < v + fsz][0]
n = 0
for line in open(disc):
    if " gofunc=" not in line:
        continue
    kv = dict(x.split("=", 1) for x in line.split())
    va, size = int(kv["vaddr"], 16), int(kv["size"])
    assert va and size, line
    assert off(va) == int(kv["offset"], 16), line
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "--start-address=%d" % va,
                          "--stop-address=%d" % (va + size), exe],
                         capture_output=True, text=True).stdout
    insns = re.findall(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$", dis, re.M)
    # Go's stack check (g.stackguard0 at 0x10(%r14)) opens every entry:
    # cmp 0x10(%r14),%rsp, or lea -N(%rsp),%r12 then cmp 0x10(%r14),%r12
    assert any(op == "cmp" and a.startswith("0x10(%r14),") for _, op, a in insns[:2]), insns[:2]
    rets = sorted(off(int(a, 16)) for a, op, _ in insns if op.startswith("ret"))
    got = sorted(int(x, 16) for x in kv["rets"].split(","))
    assert rets == got, (kv["gofunc"], [hex(r) for r in rets], [hex(g) for g in got])
    print(kv["gofunc"], "entry", kv["offset"], "rets", len(got))
    n += 1
assert n == 3, n
PY
	stop_pid "$CPID"
else
	fail "caddy is not installed (apt-get install caddy): the Go path is untested"
fi

# --- no TLS at all ---
sleep 30 &
NPID=$!
BG_PIDS+=($NPID)
"$BIN/tls_discover" $NPID | grep -q "^pid=$NPID libraries=0\$" || fail "sleep reported a TLS library"
kill $NPID
log "TLS discovery agrees with nm/readelf for nginx's libssl.so.3 and a static server"
