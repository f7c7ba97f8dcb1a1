/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where to put the uprobes of a function so that the kernel emulates the
 * probed instruction instead of single-stepping it. A uprobe on most
 * instructions traps twice (int3, then the single-step's #DB); on a jump,
 * conditional jump or call x86 emulates the instruction and traps once.
 * Measured on this project's VM (bin/bench_uprobe): ~15 us per hit
 * single-stepped (its hypervisor intercepts #DB), ~1.1 us emulated.
 *
 * Entry: the first jump/call of the function's straight-line prefix, when
 * nothing before it writes an argument register (rdi, rsi, rdx, rcx) and no
 * branch lands inside the prefix: every call passes it once, with the
 * arguments as at entry. Else the function's first instruction.
 *
 * Exits instead of a uretprobe (whose entry trap single-steps): for every
 * RET, a conditional jump before it from which the RET follows in straight
 * line, with nothing in between writing rax or being a branch target, and
 * whose taken branch ends in a call that does not return (OpenSSL's
 * stack-protector check, `jne __stack_chk_fail`). The return value is in
 * rax there. When any RET lacks one, or a jump leaves the function (a tail
 * call, a .cold part that may jump back in unseen), there are no exit
 * points: the caller uses a uretprobe and the entry at the first
 * instruction.
 */
#ifndef MM_AGENT_TLS_PROBE_POINTS_H
#define MM_AGENT_TLS_PROBE_POINTS_H

#include <stddef.h>
#include <stdint.h>

#define PP_MAX_EXITS 8

struct probe_points {
	uint64_t entry;              /* offset from the function's start */
	uint32_t nexit;              /* 0: use a uretprobe (entry is 0 then) */
	uint64_t exit[PP_MAX_EXITS]; /* offsets from the function's start */
};

/* Argument registers, in order. */
enum pp_abi {
	PP_ABI_SYSV, /* C: rdi, rsi, rdx, rcx */
	PP_ABI_GO,   /* Go's register ABI (1.17+): rax, rbx, rcx, rdi */
};

/*
 * Analyse code[0..len) (one function, x86-64) whose first nargs arguments
 * (0..4) the entry probe reads. Returns 0, or -errno when the code cannot
 * be disassembled (pp then says: function start, uretprobe).
 */
int probe_points__find(const uint8_t *code, size_t len, unsigned nargs,
		       struct probe_points *pp);
/*
 * Only the entry, for an ABI (Go functions return through uprobes on each
 * RET): the offset of the first emulated jump of the straight-line prefix
 * before any of the nargs argument registers is written (Go: the jump of
 * its stack-growth check), else 0.
 */
uint64_t probe_points__entry(const uint8_t *code, size_t len, unsigned nargs,
			     enum pp_abi abi);

/*
 * The same for the function of size bytes at file offset off of path;
 * offsets in pp are then file offsets, what uprobes attach at.
 */
int probe_points__file(const char *path, uint64_t off, uint64_t size,
		       unsigned nargs, struct probe_points *pp);

/* The same for the function at file offset off: a file offset. */
uint64_t probe_points__entry_file(const char *path, uint64_t off, uint64_t size,
				  unsigned nargs, enum pp_abi abi);

#endif /* MM_AGENT_TLS_PROBE_POINTS_H */
