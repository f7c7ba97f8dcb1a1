/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interned strings of the metric store: each label key and value once per
 * store, with a reference count, named by a 32-bit id (a series holds ids,
 * 8 bytes per label pair). Every allocation is accounted in *bytes as glibc
 * sizes it (strtab__heap_cost), the figure behind mstore_stats.bytes.
 * Not thread-safe: the store's lock guards it.
 */
#ifndef MM_EXPORTER_STRTAB_H
#define MM_EXPORTER_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct istr {
	uint32_t refs;
	uint32_t hash;
	uint32_t next; /* id + 1 of the next string in the bucket, 0 ends */
	char s[];
};

struct strtab {
	struct istr **ents; /* by id; NULL = free id */
	uint32_t nents, cap;
	uint32_t *free_ids;
	uint32_t nfree;
	uint32_t *buckets; /* id + 1, 0 = empty */
	uint32_t nbuckets; /* power of two */
	uint32_t nlive;
};

/* glibc's chunk size for a request: what "resident" really costs. */
static inline size_t strtab__heap_cost(size_t req)
{
	size_t c = (req + 8 + 15) & ~(size_t)15;

	return c < 32 ? 32 : c;
}

/* Id of s with one more reference, creating it; -ENOMEM on failure. */
long strtab__get(struct strtab *t, const char *s, size_t *bytes);
/* Id of s without taking a reference; -1 when not interned. */
long strtab__find(const struct strtab *t, const char *s);
/* Drop one reference to id; the string goes with the last. */
void strtab__put(struct strtab *t, uint32_t id, size_t *bytes);
const char *strtab__str(const struct strtab *t, uint32_t id);
void strtab__free(struct strtab *t);

#endif /* MM_EXPORTER_STRTAB_H */
