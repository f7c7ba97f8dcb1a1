#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The container image: deploy/image/build.sh builds it with buildah (vfs,
# chroot isolation) FROM scratch and exports an OCI archive; this test
# unpacks that archive by the OCI image layout (index -> manifest -> config
# and layers) itself, checks the config (entrypoint, user, labels, no
# shell), and runs the image's own binary chrooted into the unpacked root:
# `milometer version` must print what the build's binary prints, and
# `milometer check` must load the contract examples (libyaml, the CEL
# compiler, every shared library of the closure). Prints build time and
# size. Needs root (chroot).
# MM_IMAGE_BIN=bin/arm64/milometer: the arm64 image (`make ARCH=arm64`),
# its binary run in its root by qemu-user (binfmt_misc, deploy/cross-root.sh)
# and compared with this machine's build of the same tree.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer
command -v buildah >/dev/null || fail "buildah missing: run deploy/install-deps.sh"
img_bin=${MM_IMAGE_BIN:-$BIN/milometer}
[ -x "$img_bin" ] || fail "$img_bin is missing: make ARCH=arm64"
case $(readelf -h "$img_bin" | sed -n 's/^ *Machine: *//p') in
AArch64) img_arch=arm64 ;;
*) img_arch=amd64 ;;
esac
OCI=$T/milometer-image.oci.tar
start=$(date +%s%N)
IMAGE_WORK=$T/work "$ROOT/deploy/image/build.sh" "$img_bin" "$OCI" localhost/milometer:test ||
	fail "image build failed"
ms=$((($(date +%s%N) - start) / 1000000))
log "built in ${ms} ms: $(du -h "$OCI" | cut -f1) archive"

mkdir -p "$T/oci" "$T/rootfs"
tar -xf "$OCI" -C "$T/oci"
$PY "$IT_DIR/oci_unpack.py" "$T/oci" "$T/rootfs" "$T/config.json" localhost/milometer:test ||
	fail "not a valid OCI image layout"
$PY - "$T/config.json" "$img_arch" <<'PYEOF' || fail "image config is not what the manifests expect"
import json, sys
c = json.load(open(sys.argv[1]))
cc = c["config"]
assert c["os"] == "linux" and c["architecture"] == sys.argv[2], (c["os"], c["architecture"])
assert cc["Entrypoint"] == ["/usr/bin/milometer"], cc.get("Entrypoint")
assert cc.get("Cmd") == ["run"], cc.get("Cmd")
assert cc.get("User") == "0:0", cc.get("User")
assert cc["Labels"]["org.opencontainers.image.title"] == "milometer", cc["Labels"]
PYEOF
[ ! -e "$T/rootfs/bin/sh" ] && [ ! -e "$T/rootfs/usr/bin/sh" ] || fail "the image has a shell"
log "unpacked: $(du -sh "$T/rootfs" | cut -f1), $(find "$T/rootfs" -type f | wc -l) files"

want=$("$BIN/milometer" version)
got=$(chroot "$T/rootfs" /usr/bin/milometer version) || fail "milometer version failed inside the image root"
[ "$got" = "$want" ] || fail "inside the image: '$got', built binary: '$want'"
log "in the image: $got"
cp -r "$ROOT/deploy/examples/contract" "$T/rootfs/tmp/contract"
cp "$ROOT/deploy/examples/contract-httproutes.yaml" "$T/rootfs/tmp/"
# the examples pass as shipped (exit 0); 1 would be a rejection, 2 a usage
# or read error, anything else a crash
set +e
chroot "$T/rootfs" /usr/bin/milometer check --manifests /tmp/contract \
	--manifests /tmp/contract-httproutes.yaml >"$T/check.out" 2>&1
rc=$?
set -e
host_rc=0
"$BIN/milometer" check --manifests "$ROOT/deploy/examples/contract" \
	--manifests "$ROOT/deploy/examples/contract-httproutes.yaml" >"$T/check.host" 2>&1 || host_rc=$?
[ $rc -eq $host_rc ] || fail "milometer check exits $rc in the image, $host_rc on the host: $(tail -5 "$T/check.out")"
sed 's|/tmp/contract|X|g; s|'"$ROOT"'/deploy/examples/contract|X|g' "$T/check.out" >"$T/a"
sed 's|/tmp/contract|X|g; s|'"$ROOT"'/deploy/examples/contract|X|g' "$T/check.host" >"$T/b"
diff -q "$T/a" "$T/b" >/dev/null || fail "milometer check differs in the image: $(diff "$T/a" "$T/b" | head -5)"
[ $rc -eq 0 ] || fail "milometer check rejects the shipped examples: $(tail -5 "$T/check.out")"
log "milometer check in the image gives the host's result (exit $rc)"
