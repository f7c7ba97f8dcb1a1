#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# go_toolchain.sh [MIN]: print the path of a `go` binary of version >= MIN
# (default: the pinned version below), for the scripts that build test tools
# from Go modules.
#
# A `go` in PATH that is new enough is used as is. Otherwise the pinned
# toolchain is fetched once into $MM_TOOLS_CACHE (default
# /var/cache/milometer/tools), outside the repository. Debian 12 ships Go
# 1.19, older than the tools need, and its go cannot switch toolchains
# (GOTOOLCHAIN is 1.21+), so the toolchain comes from the Go module proxy,
# which serves every release as the module golang.org/toolchain
# (v0.0.1-goVERSION.GOOS-GOARCH): one zip, no Go needed to fetch it.
#
# The zip is checked against the module's h1: hash pinned here (taken from
# the Go checksum database by `go mod download`, which verifies its
# signature and tree). When the checksum database answers through the proxy
# (GOPROXY/sumdb/sum.golang.org), its record must agree as well. Another
# version (MM_GO_VERSION) needs its hash in MM_GO_TOOLCHAIN_H1.
# Needs curl and python3 (zip and hashes). Exit 2 when no toolchain can be had.
set -eu
PIN_VERSION=1.26.8
PIN_H1_amd64=h1:ZOmGe1OnfREDMIdb1Qi4G9JSuDPBLGExZMQ4nis1RXM=
PIN_H1_arm64=h1:sYL/O6MqS68ML0kjsQ36WoYIpJqkw60TxizWUYUKQMc=

me=go_toolchain.sh
min=${1:-$PIN_VERSION}
min=${min#go}
ver=${MM_GO_VERSION:-$PIN_VERSION}
cache=${MM_TOOLS_CACHE:-/var/cache/milometer/tools}

# version_ge A B: A >= B, both as 1.N[.P] (a pre-release counts as its release)
version_ge() {
	python3 - "$1" "$2" <<'PY'
import re, sys
def key(v):
    return [int(x) for x in re.findall(r"\d+", v)[:3]] + [0] * 3
sys.exit(0 if key(sys.argv[1])[:3] >= key(sys.argv[2])[:3] else 1)
PY
}

if g=$(command -v go 2>/dev/null); then
	have=$("$g" env GOVERSION 2>/dev/null || true)
	have=${have#go}
	if [ -n "$have" ] && version_ge "$have" "$min"; then
		echo "$g"
		exit 0
	fi
fi
version_ge "$ver" "$min" || {
	echo "$me: MM_GO_VERSION=$ver is older than the $min asked for" >&2
	exit 2
}

case $(uname -m) in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*)
	echo "$me: no Go toolchain is fetched for $(uname -m) (amd64 and arm64 only): put a Go >= $min in PATH" >&2
	exit 2
	;;
esac
modver=v0.0.1-go$ver.linux-$arch
dir=$cache/go$ver.linux-$arch
GO=$dir/bin/go
if [ -x "$GO" ] && [ "$("$GO" env GOVERSION 2>/dev/null)" = "go$ver" ]; then
	echo "$GO"
	exit 0
fi

want=${MM_GO_TOOLCHAIN_H1:-}
if [ -z "$want" ] && [ "$ver" = "$PIN_VERSION" ]; then
	eval "want=\$PIN_H1_$arch"
fi
[ -n "$want" ] || {
	echo "$me: no pinned hash for go$ver linux/$arch: set MM_GO_TOOLCHAIN_H1 to the checksum database's h1: for golang.org/toolchain@$modver" >&2
	exit 2
}
for t in curl python3; do
	command -v $t >/dev/null 2>&1 || {
		echo "$me: $t is needed to fetch Go $ver (deploy/install-deps.sh installs it)" >&2
		exit 2
	}
done

# first proxy of GOPROXY (comma or pipe separated), skipping direct/off
proxy=https://proxy.golang.org
for p in $(echo "${GOPROXY:-}" | tr ',|' '  '); do
	case $p in http*) proxy=${p%/}; break ;; esac
done

mkdir -p "$cache"
# one fetch at a time: several tests may ask at once
exec 9>"$cache/.go$ver.linux-$arch.lock"
flock 9
if [ -x "$GO" ] && [ "$("$GO" env GOVERSION 2>/dev/null)" = "go$ver" ]; then
	echo "$GO"
	exit 0
fi
work=$(mktemp -d "$cache/.go-fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT
url=$proxy/golang.org/toolchain/@v/$modver.zip
echo "$me: fetching Go $ver for linux/$arch from $url (~70 MB, once)" >&2
curl -fsSL --retry 3 -o "$work/go.zip" "$url" || {
	echo "$me: cannot fetch $url: set GOPROXY to a reachable Go module proxy, or put a Go >= $min in PATH" >&2
	exit 2
}
# The checksum database's record, when it answers, is a second opinion; the
# pinned hash stays the one the zip must match.
sumdb=
if curl -fsS -m 20 -o "$work/lookup" \
	"$proxy/sumdb/sum.golang.org/lookup/golang.org/toolchain@$modver" 2>/dev/null; then
	sumdb=$(sed -n "s|^golang.org/toolchain $modver \(h1:.*\)\$|\1|p" "$work/lookup")
fi

# h1: is the module's dirhash (golang.org/x/mod/sumdb/dirhash.Hash1): the
# SHA-256 of the sorted "sha256  name" lines of the zip's files. The zip is
# unpacked by the same pass, with the module prefix removed; module zips
# keep no execute bits, so bin/ and pkg/tool/ are made executable as the go
# command itself does when it switches toolchains.
python3 - "$work/go.zip" "golang.org/toolchain@$modver/" "$work/go" "$want" "$sumdb" <<'PY' || exit 2
import base64, hashlib, os, sys, zipfile
path, prefix, dest, want, sumdb = sys.argv[1:6]
me = "go_toolchain.sh"
z = zipfile.ZipFile(path)
names = sorted(i.filename for i in z.infolist() if not i.is_dir())
lines = []
for n in names:
    h = hashlib.sha256()
    with z.open(n) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    lines.append("%s  %s\n" % (h.hexdigest(), n))
got = "h1:" + base64.b64encode(hashlib.sha256("".join(lines).encode()).digest()).decode()
if got != want:
    sys.exit("%s: %s has %s, expected %s: not using it" % (me, path, got, want))
if sumdb and sumdb != got:
    sys.exit("%s: the checksum database says %s for this toolchain, the zip has %s: not using it" % (me, sumdb, got))
print("%s: hash %s matches the pinned one%s" % (me, got,
      " and the checksum database's" if sumdb else " (checksum database not reachable)"), file=sys.stderr)
for n in names:
    if not n.startswith(prefix) or ".." in n.split("/"):
        sys.exit("%s: unexpected file %r in the toolchain zip" % (me, n))
    rel = n[len(prefix):]
    out = os.path.join(dest, rel)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with z.open(n) as src, open(out, "wb") as dst:
        while True:
            b = src.read(1 << 20)
            if not b:
                break
            dst.write(b)
    top = rel.split("/")
    exe = top[0] == "bin" or (len(top) > 2 and top[0] == "pkg" and top[1] == "tool")
    os.chmod(out, 0o755 if exe else 0o644)
PY
got=$("$work/go/bin/go" env GOVERSION 2>/dev/null || true)
[ "$got" = "go$ver" ] || {
	echo "$me: the fetched toolchain says '$got', expected go$ver" >&2
	exit 2
}
rm -rf "$dir"
mv "$work/go" "$dir"
echo "$GO"
