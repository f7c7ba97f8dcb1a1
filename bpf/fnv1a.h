/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * FNV-1a, 64-bit (draft-eastlake-fnv, the "FNV-1a" of
 * http://www.isthe.com/chongo/tech/comp/fnv/): the one implementation in
 * the tree: the route compiler hashes hosts and paths with it into the
 * BPF route maps, and the BPF parser (bpf/http_parse.bpf.h) hashes the
 * request's host and path with the same fnv1a64_step(), so the two agree
 * by construction; test_route_input checks the known vectors. Header-only
 * and free of libc types so both sides include it.
 */
#ifndef MM_BPF_FNV1A_H
#define MM_BPF_FNV1A_H

#define FNV1A64_OFFSET 0xcbf29ce484222325ULL
#define FNV1A64_PRIME  0x100000001b3ULL

static inline unsigned long long fnv1a64_step(unsigned long long h,
					      unsigned char c)
{
	return (h ^ c) * FNV1A64_PRIME;
}

/* Continue hash h over len bytes (start with FNV1A64_OFFSET). */
static inline unsigned long long fnv1a64(unsigned long long h, const void *buf,
					 unsigned long len)
{
	const unsigned char *p = buf;

	for (unsigned long i = 0; i < len; i++)
		h = fnv1a64_step(h, p[i]);
	return h;
}

/* Continue hash h over a NUL-terminated string (the NUL not included). */
static inline unsigned long long fnv1a64_str(unsigned long long h,
					     const char *s)
{
	for (; *s; s++)
		h = fnv1a64_step(h, (unsigned char)*s);
	return h;
}

#endif /* MM_BPF_FNV1A_H */
