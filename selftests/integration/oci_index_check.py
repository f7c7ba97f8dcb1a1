#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""oci_index_check.py ARCHIVE REF ARCH...: check a multi-architecture OCI
archive by the image-spec: index.json names REF, REF is an image index
whose manifests are exactly one per ARCH (platform os linux), each
manifest's config says the same architecture, and the binary in each image
(/usr/bin/milometer) is an ELF for that architecture. Exits non-zero with
the reason when anything differs."""
import json
import os
import struct
import sys
import tarfile
import tempfile

INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
ELF_MACHINE = {"amd64": 62, "arm64": 183}  # EM_X86_64, EM_AARCH64


def fail(msg):
    print("oci_index_check: %s" % msg, file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) < 4:
        fail("usage: oci_index_check.py ARCHIVE REF ARCH...")
    archive, ref, archs = sys.argv[1], sys.argv[2], sys.argv[3:]
    with tempfile.TemporaryDirectory() as d:
        with tarfile.open(archive) as t:
            t.extractall(d)

        def blob(desc):
            alg, h = desc["digest"].split(":")
            p = os.path.join(d, "blobs", alg, h)
            if os.path.getsize(p) != desc["size"]:
                fail("%s: size %d, descriptor says %d" % (desc["digest"], os.path.getsize(p), desc["size"]))
            return p

        layout = json.load(open(os.path.join(d, "oci-layout")))
        if layout.get("imageLayoutVersion") != "1.0.0":
            fail("oci-layout: %r" % layout)
        top = json.load(open(os.path.join(d, "index.json")))
        named = [m for m in top["manifests"]
                 if m.get("annotations", {}).get("org.opencontainers.image.ref.name") in (ref, ref.split(":")[-1])]
        if len(named) != 1:
            fail("index.json names %r, not %s once" % (
                [m.get("annotations") for m in top["manifests"]], ref))
        if named[0]["mediaType"] != INDEX:
            fail("%s is a %s, not an image index" % (ref, named[0]["mediaType"]))
        idx = json.load(open(blob(named[0])))
        seen = []
        for m in idx["manifests"]:
            plat = m.get("platform", {})
            arch = plat.get("architecture")
            if plat.get("os") != "linux":
                fail("manifest %s: platform %r" % (m["digest"], plat))
            if m["mediaType"] != MANIFEST:
                fail("manifest %s: media type %s" % (m["digest"], m["mediaType"]))
            man = json.load(open(blob(m)))
            cfg = json.load(open(blob(man["config"])))
            if cfg.get("architecture") != arch or cfg.get("os") != "linux":
                fail("%s: the index says %s, the image's config %s/%s" % (
                    m["digest"], arch, cfg.get("os"), cfg.get("architecture")))
            machine = None
            for layer in man["layers"]:
                with tarfile.open(blob(layer)) as lt:
                    for name in ("usr/bin/milometer", "./usr/bin/milometer"):
                        try:
                            f = lt.extractfile(name)
                        except KeyError:
                            continue
                        head = f.read(20)
                        if head[:4] != b"\x7fELF":
                            fail("%s: /usr/bin/milometer is not an ELF file" % arch)
                        machine = struct.unpack("<H", head[18:20])[0]
            if machine is None:
                fail("%s: no /usr/bin/milometer in the image" % arch)
            if machine != ELF_MACHINE.get(arch):
                fail("%s: /usr/bin/milometer is ELF machine %d" % (arch, machine))
            seen.append(arch)
        if sorted(seen) != sorted(archs):
            fail("architectures %s, expected %s" % (sorted(seen), sorted(archs)))
        print("%s: %s is an image index of %s, each config and binary matching" % (
            archive, ref, ", ".join(sorted(seen))))


main()
