/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * What differs between the CPU architectures the data path supports: the
 * syscall numbers of the socket I/O it reads, where a syscall's number and
 * arguments sit in the saved registers, how a 32-bit (compat) syscall is
 * told apart, and Go's internal register ABI. The arguments come through
 * libbpf's architecture-neutral PT_REGS_PARMn_SYSCALL accessors, as
 * bcc's libbpf-tools read them (on x86-64 they are plain field loads: the
 * same instructions as reading regs->di directly).
 *
 * Build with -D__TARGET_ARCH_x86 or -D__TARGET_ARCH_arm64 (the Makefile's
 * ARCH); any other architecture stops the build here.
 */
#ifndef MM_ARCH_BPF_H
#define MM_ARCH_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#if defined(__TARGET_ARCH_x86)

/* arch/x86/entry/syscalls/syscall_64.tbl */
#define NR_read     0
#define NR_write    1
#define NR_readv    19
#define NR_writev   20
#define NR_sendfile 40
#define NR_sendto   44
#define NR_recvfrom 45
#define NR_sendmsg  46
#define NR_recvmsg  47

/* orig_ax == -1: no syscall ran (ptrace/seccomp), not a data one */
#define MM_SYSCALL_NR(r) ((r)->orig_ax)

#define TS_COMPAT_ 0x0002 /* x86 thread_info.status: a 32-bit syscall */

/*
 * ia32 syscalls have other numbers and argument registers; classic syscall
 * tracepoints never showed them either. Skipped.
 */
static __always_inline bool compat_syscall(const struct task_struct *t)
{
#ifdef MM_BOUNDED_LOOPS
	/* not a BTF pointer before 5.11 (compat.bpf.h): a probe read */
	return BPF_CORE_READ(t, thread_info.status) & TS_COMPAT_;
#else
	return t->thread_info.status & TS_COMPAT_;
#endif
}

/*
 * Go's register ABI (Go >= 1.17, internal/abi/abi_amd64.go): integer
 * arguments and results in rax, rbx, rcx, rdi, rsi, r8-r11; the current
 * goroutine (g) in r14.
 */
#define MM_GO_ARG1(r)   ((r)->ax)
#define MM_GO_ARG2(r)   ((r)->bx)
#define MM_GO_RET1(r)   ((r)->ax)
#define MM_GO_G(r)      ((r)->r14)
#define MM_GO_G_CORE(r) BPF_CORE_READ(r, r14)

#elif defined(__TARGET_ARCH_arm64)

/*
 * include/uapi/asm-generic/unistd.h: no send, recv or open syscalls on
 * arm64 (libc calls sendto, recvfrom, openat), and sendfile is sendfile64's
 * number (__NR3264_sendfile).
 */
#define NR_read          63
#define NR_write         64
#define NR_readv         65
#define NR_writev        66
#define NR_sendfile      71
#define NR_sendto        206
#define NR_recvfrom      207
#define NR_sendmsg       211
#define NR_recvmsg       212

/* syscallno == -1 (NO_SYSCALL): none ran; sign-extended, not a data one */
#define MM_SYSCALL_NR(r) ((__u64)(__s64)(r)->syscallno)

#define TIF_32BIT_ 22 /* arch/arm64/include/asm/thread_info.h */

/* AArch32 tasks (compat): other syscall numbers. Skipped. */
static __always_inline bool compat_syscall(const struct task_struct *t)
{
#ifdef MM_BOUNDED_LOOPS
	return BPF_CORE_READ(t, thread_info.flags) & (1UL << TIF_32BIT_);
#else
	return t->thread_info.flags & (1UL << TIF_32BIT_);
#endif
}

/*
 * Go's register ABI on arm64 (internal/abi/abi_arm64.go): integer
 * arguments and results in R0-R15; g in R28.
 */
#define MM_GO_ARG1(r)   (__PT_REGS_CAST(r)->regs[0])
#define MM_GO_ARG2(r)   (__PT_REGS_CAST(r)->regs[1])
#define MM_GO_RET1(r)   (__PT_REGS_CAST(r)->regs[0])
#define MM_GO_G(r)      (__PT_REGS_CAST(r)->regs[28])
#define MM_GO_G_CORE(r) BPF_CORE_READ(__PT_REGS_CAST(r), regs[28])

#else
#error "milometer's BPF programs support x86 and arm64: build with ARCH=x86 or ARCH=arm64 (-D__TARGET_ARCH_x86 or -D__TARGET_ARCH_arm64)"
#endif

/*
 * A syscall's arguments from its saved registers: at sys_exit on arm64 x0
 * already holds the return value, the first argument is orig_x0 (libbpf
 * reads it with a CO-RE probe read there).
 */
#define MM_SYSCALL_ARG1(r) PT_REGS_PARM1_SYSCALL(r)
#define MM_SYSCALL_ARG2(r) PT_REGS_PARM2_SYSCALL(r)
#define MM_SYSCALL_ARG3(r) PT_REGS_PARM3_SYSCALL(r)
#define MM_SYSCALL_ARG4(r) PT_REGS_PARM4_SYSCALL(r)

#endif /* MM_ARCH_BPF_H */
