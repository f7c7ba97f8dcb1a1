#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The DaemonSet's privileges are enough, and nothing more is used: the
# image's agent runs as deploy/kubernetes/daemonset.yaml runs it (no
# container runtime here, so pod_sandbox.sh builds the same sandbox: image
# root read-only, uid 0 with only CAP_BPF + CAP_PERFMON in its bounding set,
# no_new_privs, host PIDs, the three hostPath volumes) against a real nginx;
# it loads, attaches and counts every request the access log shows. The
# capabilities and the read-only root are read from /proc from outside.
# With either capability missing the agent must fail to start: the set is
# not only enough, it is the least.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
command -v buildah >/dev/null || fail "buildah missing: run deploy/install-deps.sh"
command -v capsh >/dev/null || fail "capsh missing (libcap2-bin)"

IMAGE_WORK=$T/work "$ROOT/deploy/image/build.sh" "$BIN/milometer" "$T/image.oci.tar" \
	localhost/milometer:test >/dev/null || fail "image build failed"
mkdir -p "$T/oci" "$T/rootfs" "$T/run" "$T/etc"
tar -xf "$T/image.oci.tar" -C "$T/oci"
$PY "$IT_DIR/oci_unpack.py" "$T/oci" "$T/rootfs" "$T/config.json" localhost/milometer:test ||
	fail "not a valid OCI image layout"

use_manifests base
cp -r "$T/manifests" "$T/etc/manifests"

# without_cap CAPS: the sandboxed agent with only CAPS must exit non-zero
without_cap() {
	local rc=0
	SANDBOX_CAPS=$1 timeout 30 "$IT_DIR/agent_ns.sh" "$IT_DIR/pod_sandbox.sh" \
		"$T/rootfs" "$T/run" "$T/etc" run --manifests /etc/milometer/manifests \
		--proxy-exe "$PROXY_EXE" --prometheus-listen "127.0.0.1:$AGENT_PORT" \
		--socket /run/milometer/milometer.sock >"$T/agent-$1.out" 2>&1 || rc=$?
	[ $rc -ne 0 ] && [ $rc -ne 124 ] ||
		fail "with only $1 the agent did not fail to start (exit $rc): $(tail -3 "$T/agent-$1.out")"
	log "only $1: exit $rc: $(grep -m1 -i -E 'fail|error|denied|not permitted' "$T/agent-$1.out" || tail -1 "$T/agent-$1.out")"
}
without_cap cap_bpf
without_cap cap_perfmon
start_backends
start_nginx
port_free $AGENT_PORT
"$IT_DIR/agent_ns.sh" "$IT_DIR/pod_sandbox.sh" "$T/rootfs" "$T/run" "$T/etc" \
	run --manifests /etc/milometer/manifests --proxy-exe "$PROXY_EXE" \
	--prometheus-listen "127.0.0.1:$AGENT_PORT" \
	--socket /run/milometer/milometer.sock >"$T/agent.out" 2>&1 &
AGENT_PID=$!
AGENT_STARTED=1
ready() { curl -fsS -o /dev/null "$AGENT_URL/readyz"; }
up() { alive "$AGENT_PID" || { tail -20 "$T/agent.out" >&2; fail "the sandboxed agent exited"; }; }
end=$(($(date +%s) + AGENT_READY_S))
until ready 2>/dev/null; do
	up
	[ "$(date +%s)" -lt "$end" ] || fail "the sandboxed agent was not ready in $AGENT_READY_S s: $(tail -5 "$T/agent.out")"
	sleep 0.1
done
agent=$(pgrep -P "$AGENT_PID" -x milometer) || fail "no milometer under the sandbox"
log "sandboxed agent ready (pid $agent)"

# what the kernel says about that process, from outside
eff=$(awk '/^CapEff:/ { print $2 }' "/proc/$agent/status")
bnd=$(awk '/^CapBnd:/ { print $2 }' "/proc/$agent/status")
nnp=$(awk '/^NoNewPrivs:/ { print $2 }' "/proc/$agent/status")
want=$(printf '%016x' $(((1 << 38) | (1 << 39)))) # CAP_PERFMON 38, CAP_BPF 39
[ "$eff" = "$want" ] || fail "CapEff $eff ($(capsh --decode=$eff)), want $want (cap_perfmon,cap_bpf)"
[ "$bnd" = "$want" ] || fail "CapBnd $bnd ($(capsh --decode=$bnd)), want $want"
[ "$nnp" = 1 ] || fail "NoNewPrivs $nnp, want 1"
[ "$(awk '/^Uid:/ { print $2 }' "/proc/$agent/status")" = 0 ] || fail "not uid 0"
rootopts=$(awk '$5 == "/" { print $6 }' "/proc/$agent/mountinfo" | tail -1)
case ",$rootopts," in *,ro,*) ;; *) fail "the agent's / is mounted '$rootopts', not read-only" ;; esac
[ "$(readlink "/proc/$agent/exe")" != "$BIN/milometer" ] || fail "not the image's binary"
log "CapEff=$eff (bpf, perfmon) NoNewPrivs=1 uid=0 root=$rootopts"

hey -n 400 -c 4 -host api.example.com "http://127.0.0.1:$PROXY_PORT/v1/status" >/dev/null
hey -n 200 -c 2 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/cart/x" >/dev/null
compare_log --ignore-unrouted --expect-total 600
log "with exactly CAP_BPF + CAP_PERFMON and a read-only root the agent counts every request"
