#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""oci_unpack.py LAYOUT_DIR ROOTFS CONFIG_OUT REF: unpack an OCI image layout
(an extracted oci-archive) by the image-spec: oci-layout version, index.json
with one manifest named REF, the manifest's config (written to CONFIG_OUT)
and its layers applied in order onto ROOTFS. Exits non-zero with the reason
when anything does not follow the spec."""
import json
import os
import subprocess
import sys

oci, rootfs, cfg_out, ref = sys.argv[1:5]


def blob(d):
    alg, h = d.split(":")
    return os.path.join(oci, "blobs", alg, h)


layout = json.load(open(os.path.join(oci, "oci-layout")))
assert layout["imageLayoutVersion"] == "1.0.0", layout
index = json.load(open(os.path.join(oci, "index.json")))
mans = index["manifests"]
assert len(mans) == 1, mans
name = mans[0].get("annotations", {}).get("org.opencontainers.image.ref.name", "")
assert name == ref or name.endswith(":" + ref.split(":")[-1]), (name, ref)
man = json.load(open(blob(mans[0]["digest"])))
assert man["mediaType"] == "application/vnd.oci.image.manifest.v1+json", man["mediaType"]
cfg = json.load(open(blob(man["config"]["digest"])))
json.dump(cfg, open(cfg_out, "w"))
size = 0
for layer in man["layers"]:
    mt = layer["mediaType"]
    assert mt.startswith("application/vnd.oci.image.layer.v1.tar"), mt
    assert os.path.getsize(blob(layer["digest"])) == layer["size"], layer
    size += layer["size"]
    flag = "-xzf" if mt.endswith("+gzip") else "-xf"
    subprocess.run(["tar", flag, blob(layer["digest"]), "-C", rootfs], check=True)
print("layers %d, compressed %d bytes" % (len(man["layers"]), size), file=sys.stderr)
