#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The kernel matrix (`make kernel-matrix`): the same test, guest.sh, on
# Debian's stock kernels booted under qemu (TCG: this machine's /dev/kvm
# cannot run an unmodified guest) and on the host's own kernel.
#
#   run.sh [--quick] [--kernels 'PKG... host'] [--agent BIN]
#          [--agent-args ARGS] [--agent-cmd CMD] [--extra CMD]... [--file F]...
#          [--keep]
#
#   --quick          bounded run for `make check` (also KERNEL_MATRIX_QUICK=1)
#   --kernels LIST   legs: Debian kernel image packages (metapackage or
#                    concrete) and/or "host" (default $MM_KERNELS or
#                    "linux-image-cloud-amd64 host")
#   --agent BIN      the milometer binary to test (default bin/milometer)
#   --agent-args A   extra arguments for `milometer run`
#   --agent-cmd CMD  replace the agent command line (sh syntax; $MM_T is the
#                    directory with the binaries, $MM_W the scratch dir); it
#                    must serve /readyz and /metrics on 127.0.0.1:29464
#   --extra CMD      an extra step run after the count check, cwd $MM_T,
#                    its own test line (repeatable), e.g.
#                    --extra './bpftool prog loadall milometer.bpf.o /sys/fs/bpf/x'
#   --file F         copy F (and its library closure) into $MM_T (repeatable)
#   --keep           keep the staged tree and logs
#
# Each leg prints guest.sh's lines indented, then "ok   LEG" or "FAIL LEG";
# a leg without guest.sh's closing "N passed, N failed" (no boot, panic,
# hang, timeout, kernel not downloadable) is a failure. The last line sums
# every leg's tests: "N passed, N failed"; exit status 1 when any failed.
#
# Each leg runs under the machine's BPF lock ($MM_BPF_LOCK, default
# /tmp/mm-bpf.lock) unless a parent process already holds it
# (`flock /tmp/mm-bpf.lock make check`).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
quick=${KERNEL_MATRIX_QUICK:-}
kernels=${MM_KERNELS:-"linux-image-cloud-amd64 host"}
keep=
extra=
files=
export MM_AGENT_BIN=${MM_AGENT_BIN:-$root/bin/milometer}
export MM_AGENT_ARGS=${MM_AGENT_ARGS:-} MM_AGENT_CMD=${MM_AGENT_CMD:-}
lock=${MM_BPF_LOCK:-/tmp/mm-bpf.lock}

usage() {
	sed -n '/^#   run.sh/,/^#   --keep/p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--kernels) kernels=${2:?}; shift ;;
	--agent) MM_AGENT_BIN=$(realpath "${2:?}"); shift ;;
	--agent-args) MM_AGENT_ARGS=${2?}; shift ;;
	--agent-cmd) MM_AGENT_CMD=${2?}; shift ;;
	--extra) extra="$extra${2:?}"$'\n'; shift ;;
	--file) files="$files $(realpath "${2:?}")"; shift ;;
	--keep) keep=1 ;;
	-h | --help) usage ;;
	*) echo "run.sh: unknown argument $1" >&2; usage ;;
	esac
	shift
done
[ "$quick" = 0 ] && quick=
[ "$(id -u)" = 0 ] || { echo "run.sh: the kernel matrix loads BPF: run as root" >&2; exit 1; }

# Bounded run: fewer requests, no wrk. The full run adds 5 s of wrk (two
# threads, keep-alive, the integration tests' request mix).
if [ -n "$quick" ]; then
	export MM_N=${MM_N:-5} MM_WRK_SECONDS=${MM_WRK_SECONDS:-0}
	qemu_timeout=240
else
	export MM_N=${MM_N:-30} MM_WRK_SECONDS=${MM_WRK_SECONDS:-5}
	qemu_timeout=420
fi
export MM_EXTRA=$extra MM_FILES=$files

out=$(mktemp -d /tmp/mm-km.XXXXXX)
chmod 755 "$out"
stage=$out/root
total_pass=0
total_fail=0
cleanup() {
	if [ -n "$keep" ]; then
		echo "kernel matrix: staged tree and logs kept in $out"
	elif [ $total_fail -ne 0 ]; then
		# the logs; the staged tree (~30 MB) is rebuilt by every run
		rm -rf "$stage" "$stage.cpio.gz"
		echo "kernel matrix: logs kept in $out"
	else
		rm -rf "$out"
	fi
}
trap cleanup EXIT

# lock_held_by_ancestor: the BPF lock is held by this process or a parent
# (flock(1) around make check), so taking it again would deadlock.
lock_held_by_ancestor() {
	local ino pids p
	[ -e "$lock" ] || return 1
	ino=$(stat -c %i "$lock")
	pids=$(awk -v i=":$ino" '$2 == "FLOCK" && $6 ~ i"$" { printf " %s ", $5 }' /proc/locks)
	[ -n "$pids" ] || return 1
	p=$$
	while [ "$p" -gt 1 ]; do
		case $pids in *" $p "*) return 0 ;; esac
		p=$(awk '/^PPid:/ { print $2 }' "/proc/$p/status" 2>/dev/null) || return 1
		[ -n "$p" ] || return 1
	done
	return 1
}
# "${locked[@]}" CMD: CMD under the lock, its start time in $out/t0 (the
# leg's time excludes waiting for the lock)
locked=(flock "$lock")
if lock_held_by_ancestor; then locked=(); fi
# shellcheck disable=SC2016 # expanded by that sh
locked+=(sh -c 'date +%s >"$0"; exec "$@"' "$out/t0")

# leg_result NAME LOG SECONDS: count the leg's closing line.
leg_result() {
	local name=$1 log=$2 secs=$3 line p f
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1)
	if [ -z "$line" ]; then
		echo "    !!! no closing 'N passed, N failed' line from $name: the guest did not"
		echo "    !!! boot or guest.sh did not finish (panic, hang, timeout); last lines:"
		tail -25 "$log" | sed 's/^/    !!! /'
		printf 'FAIL %-40s %4ss (no closing line, log %s)\n' "$name" "$secs" "$log"
		total_fail=$((total_fail + 1))
		return
	fi
	p=${line%% passed*}
	f=${line#*, }
	f=${f%% failed*}
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	if [ "$f" = 0 ] && [ "$p" -gt 0 ]; then
		printf 'ok   %-40s %4ss (%s)\n' "$name" "$secs" "$line"
	else
		[ "$p" -gt 0 ] || total_fail=$((total_fail + 1))
		printf 'FAIL %-40s %4ss (%s, log %s)\n' "$name" "$secs" "$line" "$log"
	fi
}

wrk_note=
[ "$MM_WRK_SECONDS" = 0 ] || wrk_note=", wrk ${MM_WRK_SECONDS} s"
echo "== kernel matrix: ${kernels} (${quick:+quick, }$MM_N requests per case and client$wrk_note)"
if ! "$here/stage.sh" "$stage" >"$out/stage.log" 2>&1; then
	cat "$out/stage.log"
	for k in $kernels; do
		printf 'FAIL %-40s (the test tree could not be staged, above)\n' "$k"
		total_fail=$((total_fail + 1))
	done
	echo "$total_pass passed, $total_fail failed"
	exit 1
fi

for k in $kernels; do
	if [ "$k" = host ]; then
		name="host $(uname -r)"
		log=$out/host.log
		start=$(date +%s)
		# private network namespace (own loopback: no port clashes) and
		# mount namespace (own bpffs: the agent's pins cannot clash);
		# busybox tools first in PATH, as in the guest
		"${locked[@]}" timeout -k 10 "$qemu_timeout" \
			unshare --net --mount --propagation private "$stage/bin/busybox" sh -c \
			"mount -t bpf bpf /sys/fs/bpf && ip link set lo up &&
			 PATH='$stage/bin:$PATH' MM_T='$stage/t' MM_W='$out/host-work' \
			 exec sh '$stage/t/guest.sh'" >"$log" 2>&1
		rc=$?
	else
		log=$out/$k.serial.log
		if ! vmlinuz=$("$here/kernel_fetch.sh" "$k" 2>"$out/$k.fetch.log"); then
			cat "$out/$k.fetch.log"
			printf 'FAIL %-40s (kernel %s could not be downloaded, above)\n' "$k" "$k"
			total_fail=$((total_fail + 1))
			continue
		fi
		name="guest $(cat "$(dirname "$vmlinuz")/package")"
		start=$(date +%s)
		# never KVM: this machine's /dev/kvm (kvm-pvm) cannot run it
		"${locked[@]}" timeout -k 10 "$qemu_timeout" qemu-system-x86_64 \
			-accel tcg,thread=multi -cpu max -m 1024 -smp 2 \
			-kernel "$vmlinuz" -initrd "$stage.cpio.gz" \
			-append "console=ttyS0 panic=-1 quiet" -display none \
			-monitor none -serial "file:$log.raw" -no-reboot >"$out/$k.qemu.out" 2>&1
		rc=$?
		tr -d '\r' <"$log.raw" >"$log"
		rm -f "$log.raw"
		[ $rc -eq 0 ] || { echo "qemu exit status $rc:"; cat "$out/$k.qemu.out"; } >>"$log"
	fi
	[ $rc -ne 124 ] || echo "timed out after ${qemu_timeout}s" >>"$log"
	sed 's/^/    /' "$log"
	t0=$(cat "$out/t0" 2>/dev/null || echo "$start")
	[ "$t0" -le "$start" ] || echo "    (waited $((t0 - start)) s for $lock)"
	leg_result "$name" "$log" $(($(date +%s) - t0))
done
echo "$total_pass passed, $total_fail failed"
[ $total_fail -eq 0 ]
