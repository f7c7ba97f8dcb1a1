#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# build.sh BINARY OCI_ARCHIVE [TAG]: build milometer's image FROM scratch
# with buildah and export it as an OCI archive (docker-archive-free: load it
# with `skopeo copy oci-archive:FILE docker://REGISTRY/milometer:TAG`, or
# `ctr -n k8s.io images import FILE` on a containerd node).
#   rootfs: BINARY as /usr/bin/milometer, every library `ldd` lists (at the
#   path the dynamic loader looks for it), the CA bundle, nsswitch.conf,
#   passwd/group with root and nonroot (65532). glibc >= 2.34 has the files
#   and dns NSS modules inside libc.so.6, so no libnss_* is copied.
# buildah keeps its storage under .output/image/ (vfs driver: no overlay
# or fuse needed; chroot isolation: no runc/crun namespaces), so it never
# touches /var/lib/containers and concurrent builds by others.
set -euo pipefail
bin=${1:?usage: build.sh BINARY OCI_ARCHIVE [TAG]}
out=${2:?usage: build.sh BINARY OCI_ARCHIVE [TAG]}
tag=${3:-localhost/milometer:dev}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mkdir -p "${IMAGE_WORK:-.output/image}" && cd "${IMAGE_WORK:-.output/image}" && pwd)
command -v buildah >/dev/null || {
	echo "build.sh: buildah missing: apt-get install buildah (or deploy/install-deps.sh)" >&2
	exit 2
}
[ -x "$bin" ] || { echo "build.sh: $bin missing: run make first" >&2; exit 2; }

rm -rf "$work/ctx"
mkdir -p "$work/ctx/rootfs/usr/bin" "$work/ctx/rootfs/etc/ssl/certs" "$work/storage" "$work/run"
root=$work/ctx/rootfs
install -m 0755 "$bin" "$root/usr/bin/milometer"
# another architecture's binary (make ARCH=arm64 image): its libraries come
# from that architecture's Debian root, its version is asked under qemu-user
machine=$(readelf -h "$bin" | sed -n 's/^ *Machine: *//p')
src= run=
case $machine in
*X86-64) arch=amd64 ;;
AArch64) arch=arm64 ;;
*) echo "build.sh: $bin: machine $machine: images are built for x86-64 and arm64" >&2; exit 2 ;;
esac
if [ "$arch" != "$(dpkg --print-architecture)" ]; then
	src=$("$here/../cross-root.sh" "$arch") || exit 2
	run="qemu-aarch64-static -L $src"
fi
# the loader's closure, by the paths it resolves (symlinks followed); the
# interpreter named in the ELF header is in it, at that path
"$here/../lib-closure.sh" "$bin" $src | while read -r lib; do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$src$lib" "$root$lib"
done
cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
printf 'root:x:0:0:root:/:/usr/bin/milometer\nnonroot:x:65532:65532:nonroot:/:/usr/bin/milometer\n' >"$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"
mkdir -p "$root/run/milometer" "$root/tmp"
chmod 1777 "$root/tmp"
cp "$here/Containerfile" "$work/ctx/"

B=(buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs)
version=$($run "$bin" version | awk '{ print $2 }')
# FROM scratch with no RUN step: building for arm64 executes nothing of it
"${B[@]}" bud --isolation chroot --layers=false -q --arch "$arch" \
	--label org.opencontainers.image.title=milometer \
	--label org.opencontainers.image.version="$version" \
	--label org.opencontainers.image.licenses=Apache-2.0 \
	-f "$work/ctx/Containerfile" -t "$tag" "$work/ctx" >/dev/null
rm -f "$out"
"${B[@]}" push -q "$tag" "oci-archive:$out:$tag"
"${B[@]}" rmi -f "$tag" >/dev/null
echo "$out: $tag ($(du -h "$out" | cut -f1), $(find "$root" -type f | wc -l) files)"
