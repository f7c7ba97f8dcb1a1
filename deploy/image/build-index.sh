#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# build-index.sh OUT_ARCHIVE TAG ARCHIVE...: one multi-architecture image
# from per-architecture OCI archives (deploy/image/build.sh's output, one
# per architecture): an OCI image index listing each image's manifest with
# its platform (os, architecture from the image's own config), exported as
# an OCI archive. A registry push keeps the index, so one tag serves
# x86-64 and arm64 nodes: `skopeo copy --all oci-archive:OUT
# docker://REGISTRY/milometer:TAG`.
set -euo pipefail
out=${1:?usage: build-index.sh OUT_ARCHIVE TAG ARCHIVE...}
tag=${2:?usage: build-index.sh OUT_ARCHIVE TAG ARCHIVE...}
shift 2
[ $# -ge 1 ] || { echo "build-index.sh: no per-architecture archive given" >&2; exit 2; }
command -v buildah >/dev/null || {
	echo "build-index.sh: buildah missing: apt-get install buildah (or deploy/install-deps.sh)" >&2
	exit 2
}
work=$(mkdir -p "${IMAGE_WORK:-.output/image}" && cd "${IMAGE_WORK:-.output/image}" && pwd)
mkdir -p "$work/storage" "$work/run"
B=(buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs)
list=localhost/milometer-index:build
"${B[@]}" manifest rm "$list" >/dev/null 2>&1 || true
"${B[@]}" manifest create "$list" >/dev/null
trap '"${B[@]}" manifest rm "$list" >/dev/null 2>&1 || true' EXIT
for a in "$@"; do
	[ -f "$a" ] || { echo "build-index.sh: $a: no such archive (make image / make ARCH=arm64 image)" >&2; exit 2; }
	# buildah reads the platform from the image's config
	"${B[@]}" manifest add "$list" "oci-archive:$a" >/dev/null
done
rm -f "$out"
"${B[@]}" manifest push -q --all --format oci "$list" "oci-archive:$out:$tag"
echo "$out: $tag ($(du -h "$out" | cut -f1), $# architectures)"
