// SPDX-License-Identifier: Apache-2.0
/*
 * bench_uprobe: what one uprobe hit costs the traced process on this
 * machine (TLS capture traps on every SSL_read/SSL_write of the
 * proxy). A function of this program is called ITER times with nothing
 * attached, with an entry uprobe, and with an entry and a return uprobe;
 * each runs a BPF program that does nothing (BPF_PROG_TYPE_KPROBE,
 * "r0 = 0; exit"), attached through the uprobe PMU as libbpf does. The
 * difference is the kernel's trap, single-step and return trampoline, not
 * BPF work: on bare metal about 1 us per hit; a hypervisor that intercepts
 * #BP makes it much more.
 *
 *   bench_uprobe [ITER]    prints "plain_ns X entry_ns Y entry_ret_ns Z
 *                          emulated_ns W" per call, the fastest of 5
 *                          repetitions
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <inttypes.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

__attribute__((noinline)) int bench_target(int x)
{
	asm volatile("" : "+r"(x));
	return x + 1;
}

/* test %edi,%edi; js 1f: the uprobe goes on the js (bench_jcc_at) */
int bench_jcc(int x);
asm(".text\n.globl bench_jcc\n.type bench_jcc,@function\nbench_jcc:\n"
    "\ttest %edi,%edi\n.globl bench_jcc_at\nbench_jcc_at:\n\tjs 1f\n"
    "\tlea 1(%rdi),%eax\n\tret\n1:\txor %eax,%eax\n\tret\n");
void bench_jcc_at(void);

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* the calls' results go somewhere: the loop cannot be dropped */
static volatile int sink;

static double per_call(int iter, int (*fn)(int))
{
	double best = 1e18;

	for (int r = 0; r < 5; r++) {
		double t0 = now_ns();

		for (int i = 0; i < iter; i++)
			sink += fn(i);
		double t = (now_ns() - t0) / iter;
		if (t < best)
			best = t;
	}
	return best;
}

static int read_int(const char *path, const char *prefix)
{
	char buf[64];
	FILE *f = fopen(path, "r");
	int v = -1;

	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = atoi(buf + strlen(prefix));
	fclose(f);
	return v;
}

/* File offset of code address a in this executable, from /proc/self/maps. */
static int target_offset(uint64_t a, char *path, size_t len, uint64_t *off)
{
	uint64_t lo, hi, foff;
	char line[512], file[400];
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line,
			   "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64
			   " %*s %*s %399s",
			   &lo, &hi, &foff, file) == 4 &&
		    a >= lo && a < hi) {
			*off = a - lo + foff;
			snprintf(path, len, "%s", file);
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	return -ENOENT;
}

static int attach(int prog, const char *path, uint64_t off, int ret_bit,
		  bool ret)
{
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = read_int("/sys/bus/event_source/devices/uprobe/type",
				 ""),
		.config1 = (uint64_t)(uintptr_t)path,
		.config2 = off,
		.config = ret ? 1ULL << ret_bit : 0,
	};
	int fd = syscall(__NR_perf_event_open, &a, getpid(), -1, -1,
			 PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog) ||
	    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)) {
		close(fd);
		return -errno;
	}
	return fd;
}

int main(int argc, char **argv)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int iter = argc > 1 ? atoi(argv[1]) : 20000, prog, e = -1, r = -1;
	int ret_bit =
		read_int("/sys/bus/event_source/devices/uprobe/format/retprobe",
			 "config:");
	double plain, entry, both, emul;
	char path[400];
	uint64_t off = 0, joff = 0;

	if (iter <= 0 ||
	    target_offset((uintptr_t)bench_target, path, sizeof(path), &off) ||
	    target_offset((uintptr_t)bench_jcc_at, path, sizeof(path), &joff)) {
		fprintf(stderr,
			"bench_uprobe: cannot find bench_target in /proc/self/maps\n");
		return 1;
	}
	prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "bench_nop", "GPL", insns, 2,
			     NULL);
	if (prog < 0 || ret_bit < 0) {
		fprintf(stderr,
			"bench_uprobe: cannot load a BPF kprobe program or find the uprobe PMU (%s); run as root\n",
			strerror(prog < 0 ? -prog : ENOENT));
		return 1;
	}
	plain = per_call(iter * 50, bench_target);
	e = attach(prog, path, off, ret_bit, false);
	if (e < 0) {
		fprintf(stderr,
			"bench_uprobe: uprobe on %s+0x%" PRIx64 ": %s\n", path,
			off, strerror(-e));
		return 1;
	}
	entry = per_call(iter, bench_target);
	r = attach(prog, path, off, ret_bit, true);
	if (r < 0) {
		fprintf(stderr, "bench_uprobe: uretprobe: %s\n", strerror(-r));
		return 1;
	}
	both = per_call(iter, bench_target);
	close(r);
	close(e);
	e = attach(prog, path, joff, ret_bit, false);
	if (e < 0) {
		fprintf(stderr, "bench_uprobe: uprobe on the jump: %s\n",
			strerror(-e));
		return 1;
	}
	emul = per_call(iter, bench_jcc);
	close(e);
	printf("plain_ns %.1f entry_ns %.0f entry_ret_ns %.0f emulated_ns %.0f\n",
	       plain, entry, both, emul);
	close(prog);
	return 0;
}
