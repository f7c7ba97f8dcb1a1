/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A bump allocator for one OTLP request's protobuf-c message tree: tens of
 * thousands of small nodes, all freed together once the request is packed.
 */
#ifndef MM_EXPORTER_OTLP_ARENA_H
#define MM_EXPORTER_OTLP_ARENA_H

#include <stddef.h>

struct otlp_arena_chunk;

struct otlp_arena {
	struct otlp_arena_chunk *head;
};

/* NULL on ENOMEM; max_align_t aligned. */
void *otlp_arena__alloc(struct otlp_arena *a, size_t size);
/* Forget every allocation; keeps one chunk for the next round. */
void otlp_arena__rewind(struct otlp_arena *a);
void otlp_arena__free(struct otlp_arena *a);
/* NULL/"" give protobuf-c's shared empty string (not arena memory). */
char *otlp_arena__strdup(struct otlp_arena *a, const char *s);
/* NULL for size 0 (nothing to point at) and on ENOMEM. */
void *otlp_arena__dup(struct otlp_arena *a, const void *p, size_t size);

/* A new arena object of type initialised to init, or NULL. */
#define OTLP_ANEW(a, type, init)                                               \
	({                                                                     \
		type *_p = otlp_arena__alloc(a, sizeof(type));                 \
		if (_p)                                                        \
			*_p = (type)init;                                      \
		_p;                                                            \
	})

#endif /* MM_EXPORTER_OTLP_ARENA_H */
