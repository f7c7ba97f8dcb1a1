#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# stage.sh DIR: build the kernel-matrix root tree in DIR and DIR.cpio.gz,
# the guest's initramfs. The same tree is what the host leg runs from, so
# both legs run the same files:
#   DIR/init              init.sh (guest only)
#   DIR/bin, DIR/sbin     busybox and its applets (the tools guest.sh uses)
#   DIR/usr/bin/curl      and every binary's shared-library closure (ldd)
#   DIR/t/                guest.sh, compare.awk, env.sh, extra.sh,
#                         milometer, mm-km-nginx and mm-km-static (copies of
#                         nginx), wrk, bpftool, milometer.bpf.o, manifests/,
#                         nginx configs (@W@ = the scratch dir, set at run time)
# Environment: MM_AGENT_BIN (default bin/milometer), MM_N, MM_WRK_SECONDS,
# MM_AGENT_ARGS, MM_AGENT_CMD (see guest.sh), MM_EXTRA (extra guest steps,
# one per line), MM_FILES (extra files for DIR/t, space separated).
# MM_STAGE_ARCH: another architecture's tree (arm64): the cross-built agent
# (bin/ARCH/milometer, `make ARCH=arm64`) and the other binaries from
# Debian's ARCH packages (deploy/cross-root.sh), their libraries listed by
# the root's own dynamic loader run under qemu-user.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
d=$(realpath -m "${1:?usage: stage.sh DIR}")
host_arch=$(uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
arch=${MM_STAGE_ARCH:-$host_arch}
PROXY_PORT=28080
BACKEND_PORT=28182

die() {
	echo "stage: $*" >&2
	exit 1
}
R= # the ARCH root the binaries come from ("" = this machine)
run=() # how to run one of its binaries here
bpfobj=$root/.output/milometer.bpf.o
if [ "$arch" = "$host_arch" ]; then
	agent=${MM_AGENT_BIN:-$root/bin/milometer}
	BUSYBOX=${BUSYBOX:-/bin/busybox}
else
	[ "$arch" = arm64 ] || die "no $arch tree: arm64 only"
	R=$("$root/deploy/cross-root.sh" "$arch") ||
		die "no $arch root: deploy/install-deps.sh --cross $arch"
	agent=${MM_AGENT_BIN:-$root/bin/$arch/milometer}
	bpfobj=$root/.output/$arch/milometer.bpf.o
	BUSYBOX=$R/bin/busybox
	command -v qemu-aarch64-static >/dev/null ||
		die "qemu-aarch64-static missing: deploy/install-deps.sh --cross $arch"
	run=(qemu-aarch64-static -L "$R")
	file -L "$agent" | grep -q 'ARM aarch64' ||
		die "$agent is not an $arch binary: make ARCH=$arch"
fi
for f in "$agent" "$root/bin/gen_nginx" "$BUSYBOX" "$R/usr/sbin/nginx" "$R/usr/bin/curl" \
	"$R/usr/bin/wrk"; do
	[ -x "$f" ] || die "$f is missing (make all; make deps installs busybox-static, nginx-light, curl, wrk)"
done
file -L "$BUSYBOX" 2>/dev/null | grep -q 'statically linked' ||
	[ "$(ldd "$BUSYBOX" 2>&1 | grep -c 'not a dynamic')" = 1 ] ||
	die "$BUSYBOX is not static: install busybox-static"

rm -rf "$d"
mkdir -p "$d"/{bin,sbin,dev,proc,sys,tmp,run,etc,lib64,lib/x86_64-linux-gnu,usr/bin,t/manifests}
chmod 1777 "$d/tmp"
cp "$BUSYBOX" "$d/bin/busybox"
# not the "busybox" applet itself: bin/busybox would become a self-link
for a in $("${run[@]}" "$BUSYBOX" --list | grep -vx busybox); do
	ln -sf busybox "$d/bin/$a"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$d/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$d/etc/group"

# add SRC DEST (DEST relative to the tree): SRC and its shared libraries
add() {
	local libs
	cp -L "$1" "$d/$2"
	libs=$("$root/deploy/lib-closure.sh" "$1" $R) || die "the libraries of $1: above"
	for l in $libs; do
		[ -e "$d$l" ] || (cd "${R:-/}" && cp -L --parents ".$l" "$d/")
	done
}
add "$agent" t/milometer
add "$R/usr/sbin/nginx" t/mm-km-nginx
cp "$R/usr/sbin/nginx" "$d/t/mm-km-static"
add "$R/usr/bin/curl" usr/bin/curl
add "$R/usr/bin/wrk" t/wrk
if [ -x "$R/usr/sbin/bpftool" ]; then add "$R/usr/sbin/bpftool" t/bpftool; fi
[ ! -f "$bpfobj" ] || cp "$bpfobj" "$d/t/"
for f in ${MM_FILES:-}; do
	[ -e "$f" ] || die "--file $f does not exist"
	add "$f" "t/$(basename "$f")"
done
cp "$here/guest.sh" "$here/compare.awk" "$d/t/"
cp "$root/selftests/integration/wrk_mix.lua" "$d/t/"
cp "$root/selftests/integration/manifests/base/"*.yaml "$d/t/manifests/"
install -m 0755 "$here/init.sh" "$d/init"

# gateway config as selftests/integration/lib.sh's nginx_config makes it
# (two workers, upstream keep-alive), both backend names on the one nginx
# backend (there is no python in the guest)
"$root/bin/gen_nginx" --manifests "$d/t/manifests" \
	--listen "127.0.0.1:$PROXY_PORT" --log @W@/gw/access.log \
	--upstream py=127.0.0.1:$BACKEND_PORT --upstream static=127.0.0.1:$BACKEND_PORT \
	-o "$d/t/gw.conf.gen" || die "gen_nginx failed"
sed -e 's/^worker_processes 1;/user root;\nworker_processes 2;/' \
	-e 's/^http {/http {\n    keepalive_requests 1000000;/' \
	-e 's/^\(    upstream mm_.* {\)$/\1\n\tkeepalive 16;/' \
	"$d/t/gw.conf.gen" >"$d/t/gw.conf.in"
grep -q 'keepalive 16' "$d/t/gw.conf.in" || die "gen_nginx's output changed: update stage.sh"
cat >"$d/t/static.conf.in" <<EOF
user root;
worker_processes 1;
pid @W@/static/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    keepalive_requests 1000000;
    # nginx's compiled-in temp paths (/var/lib/nginx) are not in the guest
    client_body_temp_path @W@/static/body;
    proxy_temp_path @W@/static/proxy;
    fastcgi_temp_path @W@/static/fastcgi;
    uwsgi_temp_path @W@/static/uwsgi;
    scgi_temp_path @W@/static/scgi;
    server {
        listen 127.0.0.1:$BACKEND_PORT;
        location ~ /s404 { return 404 "not found\n"; }
        location ~ /s500 { return 500 "boom\n"; }
        location ~ /s503 { return 503 "unavailable\n"; }
        location / { return 200 "static ok\n"; }
    }
}
EOF

# settings for guest.sh, quoted for sh
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
{
	echo "MM_N=$(q "${MM_N:-10}")"
	echo "MM_WRK_SECONDS=$(q "${MM_WRK_SECONDS:-0}")"
	echo "MM_AGENT_ARGS=$(q "${MM_AGENT_ARGS:-}")"
	echo "MM_AGENT_CMD=$(q "${MM_AGENT_CMD:-}")"
	# an arm64 guest is emulated instruction by instruction, the verifier too
	[ "$arch" = "$host_arch" ] || echo "MM_READY_SECONDS=400"
} >"$d/t/env.sh"
printf '%s\n' "${MM_EXTRA:-}" >"$d/t/extra.sh"

(cd "$d" && find . | "$BUSYBOX" cpio -o -H newc 2>/dev/null | gzip -1) >"$d.cpio.gz"
