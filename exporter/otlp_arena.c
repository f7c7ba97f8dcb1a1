// SPDX-License-Identifier: Apache-2.0
/* Bump allocator for OTLP message trees; see otlp_arena.h. */
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "exporter/otlp_arena.h"

#define ARENA_CHUNK (64 * 1024)

struct otlp_arena_chunk {
	struct otlp_arena_chunk *next;
	size_t used, size;
	max_align_t data[];
};

void *otlp_arena__alloc(struct otlp_arena *a, size_t size)
{
	struct otlp_arena_chunk *c = a->head;
	void *p;

	size = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!c || c->size - c->used < size) {
		size_t csize = size > ARENA_CHUNK ? size : ARENA_CHUNK;

		c = malloc(sizeof(*c) + csize);
		if (!c)
			return NULL;
		c->used = 0;
		c->size = csize;
		c->next = a->head;
		a->head = c;
	}
	p = (char *)c->data + c->used;
	c->used += size;
	return p;
}

void otlp_arena__rewind(struct otlp_arena *a)
{
	struct otlp_arena_chunk *c = a->head, *next;

	if (!c)
		return;
	for (next = c->next; next;) {
		struct otlp_arena_chunk *n = next->next;

		free(next);
		next = n;
	}
	c->next = NULL;
	c->used = 0;
}

void otlp_arena__free(struct otlp_arena *a)
{
	otlp_arena__rewind(a);
	free(a->head);
	a->head = NULL;
}

char *otlp_arena__strdup(struct otlp_arena *a, const char *s)
{
	size_t n;
	char *d;

	if (!s || !*s)
		return (char *)protobuf_c_empty_string;
	n = strlen(s) + 1;
	d = otlp_arena__alloc(a, n);
	if (d)
		memcpy(d, s, n);
	return d;
}

void *otlp_arena__dup(struct otlp_arena *a, const void *p, size_t size)
{
	void *d;

	if (!size)
		return NULL;
	d = otlp_arena__alloc(a, size);
	if (d)
		memcpy(d, p, size);
	return d;
}
