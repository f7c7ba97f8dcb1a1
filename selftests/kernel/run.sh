#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The kernel matrix (`make kernel-matrix`): the same test, guest.sh, on
# Debian's stock kernels booted under qemu (TCG: this machine's /dev/kvm
# cannot run an unmodified guest) and on the host's own kernel.
#
#   run.sh [--quick] [--kernels 'LEG...'] [--agent BIN]
#          [--agent-args ARGS] [--agent-cmd CMD] [--extra CMD]... [--file F]...
#          [--keep] [--results FILE]
#
#   --quick          bounded run for `make check` (also KERNEL_MATRIX_QUICK=1)
#   --kernels LIST   legs, each [SUITE/]PACKAGE[:MODE] or host[:MODE]:
#                    a Debian kernel image package (metapackage or concrete;
#                    SUITE bookworm by default, e.g. trixie/...; -arm64
#                    packages boot under qemu-system-aarch64 with the
#                    cross-built agent, `make ARCH=arm64`) or this machine's
#                    kernel; MODE the capture mode asked for (auto, sock,
#                    sys-exit; default auto) (default $MM_KERNELS, else
#                    $QUICK_LEGS with --quick, $FULL_LEGS without)
#   --agent BIN      the milometer binary to test (default bin/milometer;
#                    an arm64 leg runs $MM_AGENT_BIN_CROSS, default
#                    bin/arm64/milometer)
#   --agent-args A   extra arguments for `milometer run`
#   --agent-cmd CMD  replace the agent command line (sh syntax; $MM_T is the
#                    directory with the binaries, $MM_W the scratch dir); it
#                    must serve /readyz and /metrics on 127.0.0.1:29464
#   --extra CMD      an extra step run after the count check, cwd $MM_T,
#                    its own test line (repeatable), e.g.
#                    --extra './bpftool prog loadall milometer.bpf.o /sys/fs/bpf/x'
#   --file F         copy F (and its library closure) into $MM_T (repeatable)
#   --keep           keep the staged tree and logs
#   --results FILE   append one line per leg (tab separated: date, leg,
#                    kernel, arch, capture mode asked and used, pass/fail,
#                    counts, command) for selftests/kernel/support_matrix.sh
#                    (default $MM_KM_RESULTS, none if unset)
#
# Each leg prints guest.sh's lines indented, then "ok   LEG" or "FAIL LEG";
# a leg without guest.sh's closing "N passed, N failed" (no boot, panic,
# hang, timeout, kernel not downloadable) is a failure. The last line sums
# every leg's tests: "N passed, N failed"; exit status 1 when any failed.
#
# x86-64 guests run under single-threaded TCG, arm64 guests multi-threaded
# ($MM_TCG_THREAD, single or multi, sets both; the reason is at the qemu
# command line below).
#
# Each leg runs under the machine's BPF lock ($MM_BPF_LOCK, default
# /tmp/mm-bpf.lock) unless a parent process already holds it
# (`flock /tmp/mm-bpf.lock make check`).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
quick=${KERNEL_MATRIX_QUICK:-}
kernels=${MM_KERNELS:-}
# Debian 11's 5.10 (no bpf_loop: the bounded-loop build of the data path,
# docs/kernel-support.md), Debian 12's 6.1 and Debian 13's 6.12 on x86-64, both capture modes where
# the kernel has both (the socket tracepoints are 6.3+: 6.1 runs sys-exit
# whatever is asked), the same on arm64 (Debian 12's and 13's arm64 cloud
# kernels, the cross-built agent), and this machine's kernel. --quick: the
# x86-64 guests and the host (an arm64 guest takes about two minutes
# under TCG, most of it verifying the object, and needs the cross build).
QUICK_LEGS="bullseye/linux-image-cloud-amd64 linux-image-cloud-amd64 trixie/linux-image-cloud-amd64 host"
FULL_LEGS="bullseye/linux-image-cloud-amd64 linux-image-cloud-amd64 trixie/linux-image-cloud-amd64
trixie/linux-image-cloud-amd64:sys-exit linux-image-cloud-arm64
trixie/linux-image-cloud-arm64 trixie/linux-image-cloud-arm64:sys-exit
host host:sys-exit"
keep=
results=${MM_KM_RESULTS:-}
cmdline="selftests/kernel/run.sh $*"
extra=
files=
export MM_AGENT_BIN=${MM_AGENT_BIN:-$root/bin/milometer}
export MM_AGENT_ARGS=${MM_AGENT_ARGS:-} MM_AGENT_CMD=${MM_AGENT_CMD:-}
lock=${MM_BPF_LOCK:-/tmp/mm-bpf.lock}

usage() {
	sed -n '/^#   run.sh/,/none if unset)$/p' "$0" | sed 's/^# \{0,1\}//' >&2
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
	--results) results=$(realpath -m "${2:?}"); shift ;;
	-h | --help) usage ;;
	*) echo "run.sh: unknown argument $1" >&2; usage ;;
	esac
	shift
done
[ "$quick" = 0 ] && quick=
if [ -z "$kernels" ]; then
	if [ -n "$quick" ]; then kernels=$QUICK_LEGS; else kernels=$FULL_LEGS; fi
	kernels=$(echo $kernels)
fi
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
stage=
total_pass=0
total_fail=0
cleanup() {
	if [ -n "$keep" ]; then
		echo "kernel matrix: staged tree and logs kept in $out"
	elif [ $total_fail -ne 0 ]; then
		# the logs; the staged trees (~30 MB each) are rebuilt by every run
		rm -rf "$out"/root-*
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
		leg_status=FAIL leg_line="no closing line"
		return
	fi
	p=${line%% passed*}
	f=${line#*, }
	f=${f%% failed*}
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	leg_line=$line
	if [ "$f" = 0 ] && [ "$p" -gt 0 ]; then
		leg_status=ok
		printf 'ok   %-40s %4ss (%s)\n' "$name" "$secs" "$line"
	else
		leg_status=FAIL
		[ "$p" -gt 0 ] || total_fail=$((total_fail + 1))
		printf 'FAIL %-40s %4ss (%s, log %s)\n' "$name" "$secs" "$line" "$log"
	fi
}

wrk_note=
[ "$MM_WRK_SECONDS" = 0 ] || wrk_note=", wrk ${MM_WRK_SECONDS} s"
echo "== kernel matrix: ${kernels} (${quick:+quick, }$MM_N requests per case and client$wrk_note)"

host_arch=$(uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
# stage_for ARCH: the tree for ARCH's legs (staged once), path in $stage;
# false (and the reason printed) when it cannot be staged
staged=
stage_for() {
	stage=$out/root-$1
	case " $staged " in *" $1 "*) return 0 ;; esac
	if [ "$1" = "$host_arch" ]; then
		"$here/stage.sh" "$stage" >"$out/stage-$1.log" 2>&1
	else
		MM_STAGE_ARCH=$1 MM_AGENT_BIN=${MM_AGENT_BIN_CROSS:-$root/bin/$1/milometer} \
			"$here/stage.sh" "$stage" >"$out/stage-$1.log" 2>&1
	fi || { cat "$out/stage-$1.log"; return 1; }
	staged="$staged $1"
}
# record LEG KERNEL ARCH MODE: one results line for the leg just counted
record() {
	local used loops
	[ -n "$results" ] || return 0
	used=$(sed -n 's/^capture mode: //p' "$log" | tail -1)
	# the data path build, when not the bpf_loop one (docs/kernel-support.md)
	loops=$(sed -n 's/^loops: //p' "$log" | tail -1)
	[ "${loops:-bpf_loop}" = bpf_loop ] || used="$used ($loops loops)"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$1" "$2" "$3" \
		"$4" "${used:-none}" "$leg_status" "$leg_line" "$cmdline" >>"$results"
}

for leg in $kernels; do
	t=$qemu_timeout
	k=${leg%%:*}
	mode=auto
	[ "$k" = "$leg" ] || mode=${leg#*:}
	case $mode in auto | sock | sys-exit) ;; *)
		printf 'FAIL %-40s (capture mode %s: use auto, sock or sys-exit)\n' "$leg" "$mode"
		total_fail=$((total_fail + 1))
		continue ;;
	esac
	capture=
	[ "$mode" = auto ] || capture=$mode
	tag=$(echo "$leg" | tr '/:' '__')
	if [ "$k" = host ]; then
		arch=$host_arch
		kernel="host $(uname -r)"
	else
		if ! vmlinuz=$("$here/kernel_fetch.sh" "$k" 2>"$out/$tag.fetch.log"); then
			cat "$out/$tag.fetch.log"
			printf 'FAIL %-40s (kernel %s could not be downloaded, above)\n' "$leg" "$k"
			total_fail=$((total_fail + 1))
			continue
		fi
		arch=$(cat "$(dirname "$vmlinuz")/arch" 2>/dev/null || echo amd64)
		arch=${arch/amd64/x86}
		kernel=$(cat "$(dirname "$vmlinuz")/package")
	fi
	if ! stage_for "$arch"; then
		printf 'FAIL %-40s (the %s test tree could not be staged, above)\n' "$leg" "$arch"
		total_fail=$((total_fail + 1))
		continue
	fi
	name="${k/host/host $(uname -r)}${capture:+ ($capture)}"
	[ "$k" = host ] || name="guest $kernel${capture:+ ($capture)}"
	[ "$arch" = "$host_arch" ] || name="$name [$arch]"
	if [ "$k" = host ]; then
		log=$out/$tag.log
		start=$(date +%s)
		# private network namespace (own loopback: no port clashes) and
		# mount namespace (own bpffs: the agent's pins cannot clash);
		# busybox tools first in PATH, as in the guest
		"${locked[@]}" timeout -k 10 "$qemu_timeout" \
			unshare --net --mount --propagation private "$stage/bin/busybox" sh -c \
			"mount -t bpf bpf /sys/fs/bpf && ip link set lo up &&
			 PATH='$stage/bin:$PATH' MM_T='$stage/t' MM_W='$out/$tag-work' \
			 MM_CAPTURE='$capture' exec sh '$stage/t/guest.sh'" >"$log" 2>&1
		rc=$?
	else
		log=$out/$tag.serial.log
		# never KVM: this machine's /dev/kvm (kvm-pvm) cannot run it
		# x86 guests run both vCPUs in one host thread: the agent's
		# per-process uprobes are per-task perf events, which switch on
		# perf's context-switch hooks (a jump label patched into
		# __schedule by int3 and IPIs), and a guest under multi-threaded
		# TCG (qemu 7.2) has died on that int3 after the patch was done
		# ("Fatal exception in interrupt" at __schedule). An arm64 jump
		# label is one 4-byte store (NOP to B, no int3 protocol): arm64
		# guests keep a thread per vCPU.
		case $arch in
		x86) qemu=(qemu-system-x86_64 -cpu max -accel "tcg,thread=${MM_TCG_THREAD:-single}") console=ttyS0 ;;
		# pauth-impdef: TCG's QARMA pointer authentication is most of an
		# arm64 guest's time; the implementation-defined one is not
		arm64) qemu=(qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -accel "tcg,thread=${MM_TCG_THREAD:-multi}") console=ttyAMA0 ;;
		esac
		# (the arm64 guest's agent start alone is ~95 s under TCG)
		[ "$arch" = "$host_arch" ] || t=$((qemu_timeout + 300))
		start=$(date +%s)
		"${locked[@]}" timeout -k 10 "$t" "${qemu[@]}" \
			-m 1024 -smp 2 \
			-kernel "$vmlinuz" -initrd "$stage.cpio.gz" \
			-append "console=$console panic=-1 quiet${capture:+ mm.capture=$capture}" \
			-display none -monitor none -serial "file:$log.raw" -no-reboot \
			>"$out/$tag.qemu.out" 2>&1
		rc=$?
		tr -d '\r' <"$log.raw" >"$log"
		rm -f "$log.raw"
		[ $rc -eq 0 ] || { echo "qemu exit status $rc:"; cat "$out/$tag.qemu.out"; } >>"$log"
	fi
	[ $rc -ne 124 ] || echo "timed out after ${t}s" >>"$log"
	sed 's/^/    /' "$log"
	t0=$(cat "$out/t0" 2>/dev/null || echo "$start")
	[ "$t0" -le "$start" ] || echo "    (waited $((t0 - start)) s for $lock)"
	leg_result "$name" "$log" $(($(date +%s) - t0))
	record "$leg" "$kernel" "$arch" "$mode"
done
echo "$total_pass passed, $total_fail failed"
[ $total_fail -eq 0 ]
