#!/bin/sh
# Regenerate vmlinux/<arch>/vmlinux.h (arch: x86, arm64) from a kernel's BTF.
#   gen-vmlinux.sh [ARCH]
#     ARCH of the running kernel: its BTF (/sys/kernel/btf/vmlinux)
#     another ARCH: the BTF of Debian 12's cloud kernel for ARCH
#       (linux-image-cloud-arm64, downloaded by
#       selftests/kernel/kernel_fetch.sh, never installed), cut out of the
#       kernel image: the .BTF section is loaded with the kernel, so the
#       Image holds it whole
#   BTF=FILE gen-vmlinux.sh ARCH: from FILE (raw BTF, or an ELF vmlinux)
# The build uses the checked-in header so it does not depend on the build
# host's kernel; CO-RE relocations adapt the programs to the target kernel.
set -eu
host=$(uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
arch=${1:-$host}
here=$(cd "$(dirname "$0")" && pwd)
case $arch in
x86) deb=amd64 ;;
arm64) deb=arm64 ;;
*) echo "gen-vmlinux: architecture $arch is not supported (x86, arm64)" >&2; exit 1 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -n "${BTF:-}" ] || [ "$arch" = "$host" ]; then
	btf=${BTF:-/sys/kernel/btf/vmlinux}
	[ -r "$btf" ] || { echo "gen-vmlinux: $btf not readable: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF)" >&2; exit 1; }
else
	image=$("$here/../selftests/kernel/kernel_fetch.sh" "linux-image-cloud-$deb")
	src="$(cat "$(dirname "$image")/package") $(basename "$image")"
	btf=$tmp/btf
	# struct btf_header: magic 0xeb9f, version 1, flags 0, hdr_len 24,
	# then type_off/len, str_off/len (types first, strings after them)
	python3 - "$image" "$btf" <<-'EOF' || exit 1
	import gzip, struct, sys
	d = open(sys.argv[1], 'rb').read()
	if d[:2] == b'\x1f\x8b':
	    d = gzip.decompress(d)
	i = d.find(b'\x9f\xeb\x01\x00\x18\x00\x00\x00')
	while i >= 0:
	    hl, to, tl, so, sl = struct.unpack_from('<5I', d, i + 4)
	    if to == 0 and so == tl and tl > 1 << 20:
	        open(sys.argv[2], 'wb').write(d[i:i + hl + so + sl])
	        sys.exit(0)
	    i = d.find(b'\x9f\xeb\x01\x00\x18\x00\x00\x00', i + 1)
	sys.exit('gen-vmlinux: no BTF in %s: the kernel needs CONFIG_DEBUG_INFO_BTF' % sys.argv[1])
	EOF
fi
mkdir -p "$here/$arch"
bpftool btf dump file "$btf" format c > "$here/$arch/vmlinux.h.tmp"
mv "$here/$arch/vmlinux.h.tmp" "$here/$arch/vmlinux.h"
echo "wrote $here/$arch/vmlinux.h from ${src:-$btf}"
