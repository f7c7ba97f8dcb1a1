/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Stand-in for libbpf's <bpf/bpf_core_read.h> in the fuzzer's user-space
 * build: no relocations, a CO-RE read is a plain dereference chain.
 */
#ifndef MM_FUZZ_BPF_CORE_READ_H
#define MM_FUZZ_BPF_CORE_READ_H

#define ___fz_r1(s, a)                 ((s)->a)
#define ___fz_r2(s, a, b)              ((s)->a->b)
#define ___fz_r3(s, a, b, c)           ((s)->a->b->c)
#define ___fz_pick(_1, _2, _3, n, ...) n
#define BPF_CORE_READ(s, ...)                                                  \
	___fz_pick(__VA_ARGS__, ___fz_r3, ___fz_r2, ___fz_r1, x)(s, __VA_ARGS__)

#endif /* MM_FUZZ_BPF_CORE_READ_H */
