// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>

#include "agent/pipeline/deferred.h"

#define MIN_CAP 1024
#define MAX_CAP (1u << 22)

struct deferred_tab {
	struct deferred *e;
	uint64_t cap; /* power of two */
	uint64_t n;
};

static uint64_t slot_of(uint64_t conn, uint32_t seq, uint64_t cap)
{
	uint64_t k = conn ^ ((uint64_t)seq * 0x9e3779b97f4a7c15ULL);

	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k & (cap - 1);
}

struct deferred_tab *deferred__new(void)
{
	struct deferred_tab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cap = MIN_CAP;
	t->e = calloc(t->cap, sizeof(*t->e));
	if (!t->e) {
		free(t);
		return NULL;
	}
	return t;
}

void deferred__free(struct deferred_tab *t)
{
	if (!t)
		return;
	free(t->e);
	free(t);
}

static struct deferred *find(const struct deferred_tab *t, uint64_t conn,
			     uint32_t seq)
{
	uint64_t i = slot_of(conn, seq, t->cap);

	for (; t->e[i].conn_id; i = (i + 1) & (t->cap - 1))
		if (t->e[i].conn_id == conn && t->e[i].seq == seq)
			return &t->e[i];
	return NULL;
}

static void place(struct deferred *e, uint64_t cap, const struct deferred *d)
{
	uint64_t i = slot_of(d->conn_id, d->seq, cap);

	while (e[i].conn_id)
		i = (i + 1) & (cap - 1);
	e[i] = *d;
}

static int grow(struct deferred_tab *t)
{
	uint64_t ncap = t->cap * 2;
	struct deferred *ne;

	if (ncap > MAX_CAP)
		return -ENOMEM;
	ne = calloc(ncap, sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	for (uint64_t i = 0; i < t->cap; i++)
		if (t->e[i].conn_id)
			place(ne, ncap, &t->e[i]);
	free(t->e);
	t->e = ne;
	t->cap = ncap;
	return 0;
}

int deferred__put(struct deferred_tab *t, const struct deferred *d)
{
	struct deferred *old = find(t, d->conn_id, d->seq);

	if (old) {
		*old = *d;
		return 0;
	}
	/* keep probes short: at most half full */
	if ((t->n + 1) * 2 > t->cap && grow(t))
		return -ENOMEM;
	place(t->e, t->cap, d);
	t->n++;
	return 0;
}

const struct deferred *deferred__get(const struct deferred_tab *t,
				     uint64_t conn_id, uint32_t seq)
{
	return find(t, conn_id, seq);
}

/* Backward-shift deletion: no tombstones, probes stay as short as inserted. */
static void remove_at(struct deferred_tab *t, uint64_t i)
{
	uint64_t j = i;

	t->e[i].conn_id = 0;
	t->n--;
	for (;;) {
		uint64_t home;

		j = (j + 1) & (t->cap - 1);
		if (!t->e[j].conn_id)
			return;
		home = slot_of(t->e[j].conn_id, t->e[j].seq, t->cap);
		/* move e[j] into the hole if its home is not in (i, j] */
		if ((j > i && (home <= i || home > j)) ||
		    (j < i && (home <= i && home > j))) {
			t->e[i] = t->e[j];
			t->e[j].conn_id = 0;
			i = j;
		}
	}
}

void deferred__del(struct deferred_tab *t, uint64_t conn_id, uint32_t seq)
{
	struct deferred *d = find(t, conn_id, seq);

	if (d)
		remove_at(t, d - t->e);
}

uint64_t deferred__expire(struct deferred_tab *t, uint64_t now_ns,
			  uint64_t max_age_ns)
{
	uint64_t dropped = 0;

	for (uint64_t i = 0; i < t->cap; i++) {
		/* a shifted-in entry lands at i: look at i again */
		while (t->e[i].conn_id && now_ns - t->e[i].at_ns > max_age_ns) {
			remove_at(t, i);
			dropped++;
		}
	}
	return dropped;
}

uint64_t deferred__count(const struct deferred_tab *t)
{
	return t->n;
}
