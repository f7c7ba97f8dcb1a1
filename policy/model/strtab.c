// SPDX-License-Identifier: Apache-2.0
/* Interned label strings of the metric store: see strtab.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/fnv1a.h"
#include "policy/model/strtab.h"

static uint32_t hash_str(const char *s)
{
	uint64_t h = fnv1a64_str(FNV1A64_OFFSET, s);

	return (uint32_t)(h ^ h >> 32); /* fold: both halves spread */
}

static long find_hashed(const struct strtab *t, const char *s, uint32_t h)
{
	uint32_t e;

	if (!t->nbuckets)
		return -1;
	for (e = t->buckets[h & (t->nbuckets - 1)]; e; e = t->ents[e - 1]->next)
		if (t->ents[e - 1]->hash == h && !strcmp(t->ents[e - 1]->s, s))
			return e - 1;
	return -1;
}

static int grow_buckets(struct strtab *t, size_t *bytes)
{
	uint32_t n = t->nbuckets ? t->nbuckets * 2 : 256, i, *b;

	b = calloc(n, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (i = 0; i < t->nents; i++) {
		struct istr *e = t->ents[i];

		if (!e)
			continue;
		e->next = b[e->hash & (n - 1)];
		b[e->hash & (n - 1)] = i + 1;
	}
	if (t->buckets)
		*bytes -= strtab__heap_cost(t->nbuckets * sizeof(*b));
	*bytes += strtab__heap_cost(n * sizeof(*b));
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = n;
	return 0;
}

long strtab__get(struct strtab *t, const char *s, size_t *bytes)
{
	uint32_t h = hash_str(s), id;
	size_t len;
	long found = find_hashed(t, s, h);
	struct istr *e;

	if (found >= 0) {
		t->ents[found]->refs++;
		return found;
	}
	if (t->nlive >= t->nbuckets && grow_buckets(t, bytes))
		return -ENOMEM;
	if (!t->nfree && t->nents == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 256;
		struct istr **ents = realloc(t->ents, cap * sizeof(*ents));
		uint32_t *fr;

		if (!ents)
			return -ENOMEM;
		t->ents = ents;
		fr = realloc(t->free_ids, cap * sizeof(*fr));
		if (!fr)
			return -ENOMEM;
		t->free_ids = fr;
		if (t->cap)
			*bytes -= strtab__heap_cost(
				t->cap * (sizeof(*ents) + sizeof(*fr)));
		*bytes +=
			strtab__heap_cost(cap * (sizeof(*ents) + sizeof(*fr)));
		t->cap = cap;
	}
	len = strlen(s);
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return -ENOMEM;
	*bytes += strtab__heap_cost(sizeof(*e) + len + 1);
	memcpy(e->s, s, len + 1);
	e->refs = 1;
	e->hash = h;
	id = t->nfree ? t->free_ids[--t->nfree] : t->nents++;
	t->ents[id] = e;
	e->next = t->buckets[h & (t->nbuckets - 1)];
	t->buckets[h & (t->nbuckets - 1)] = id + 1;
	t->nlive++;
	return id;
}

void strtab__put(struct strtab *t, uint32_t id, size_t *bytes)
{
	struct istr *e = t->ents[id];
	uint32_t *pp;

	if (--e->refs)
		return;
	for (pp = &t->buckets[e->hash & (t->nbuckets - 1)]; *pp - 1 != id;
	     pp = &t->ents[*pp - 1]->next)
		;
	*pp = e->next;
	*bytes -= strtab__heap_cost(sizeof(*e) + strlen(e->s) + 1);
	free(e);
	t->ents[id] = NULL;
	t->free_ids[t->nfree++] = id;
	t->nlive--;
}

const char *strtab__str(const struct strtab *t, uint32_t id)
{
	return t->ents[id]->s;
}

void strtab__free(struct strtab *t)
{
	uint32_t i;

	for (i = 0; i < t->nents; i++)
		free(t->ents[i]);
	free(t->ents);
	free(t->free_ids);
	free(t->buckets);
}

long strtab__find(const struct strtab *t, const char *s)
{
	return find_hashed(t, s, hash_str(s));
}
