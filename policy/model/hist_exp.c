// SPDX-License-Identifier: Apache-2.0
/*
 * Exponential histogram: see hist_exp.h. Index mapping follows the OTel
 * data-model "Exponential Buckets" section and the Go SDK
 * (sdk/metric/internal/aggregate/exponential_histogram.go).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/model/hist_exp.h"

/* x >> c rounding toward -Inf, independent of how >> treats negatives. */
static int64_t floor_shift(int64_t x, int32_t c)
{
	return x >= 0 ? x >> c : -((-x - 1) >> c) - 1;
}

double hist_exp__lower_boundary(int32_t index, int32_t scale)
{
	int64_t q, r;

	if (scale <= 0) {
		int64_t e = (int64_t)index * ((int64_t)1 << -scale);

		/* past +-4096 ldexp saturates to Inf or 0 anyway */
		if (e > 4096)
			e = 4096;
		if (e < -4096)
			e = -4096;
		return ldexp(1.0, (int)e);
	}
	/* base^i = 2^(i / 2^s): split i so exp2() only sees [0, 1) */
	q = floor_shift(index, scale);
	r = (int64_t)index - q * ((int64_t)1 << scale);
	return ldexp(exp2(ldexp((double)r, -scale)), (int)q);
}

/*
 * Scale <= 0: the bucket is a function of the binary exponent alone, so it
 * is exact. An exact power of two is the inclusive upper boundary of the
 * bucket below, hence the -1 when the significand is exactly 1.
 */
static int32_t index_exponent(double v, int32_t scale)
{
	int e;
	double frac = frexp(v, &e); /* v = frac * 2^e, frac in [0.5, 1) */
	int64_t exp2v = e - 1;

	if (frac == 0.5)
		exp2v--;
	return (int32_t)floor_shift(exp2v, -scale);
}

/*
 * Scale > 0: log() is not exact near boundaries, so exact powers of two are
 * special-cased (as the SDK does) and the result is corrected against the
 * same boundaries the exporters print, so that a value always lies in
 * (lower_boundary(i), lower_boundary(i + 1)].
 */
static int32_t index_log(double v, int32_t scale)
{
	int e;
	double frac = frexp(v, &e);
	int64_t idx;

	if (frac == 0.5)
		return (int32_t)((int64_t)(e - 1) * ((int64_t)1 << scale) - 1);
	idx = (int64_t)floor(log(v) * ldexp(M_LOG2E, scale));
	if (v <= hist_exp__lower_boundary((int32_t)idx, scale))
		idx--;
	else if (v > hist_exp__lower_boundary((int32_t)(idx + 1), scale))
		idx++;
	return (int32_t)idx;
}

int32_t hist_exp__index(double v, int32_t scale)
{
	return scale <= 0 ? index_exponent(v, scale) : index_log(v, scale);
}

void hist_exp__init(struct hist_exp *h, int32_t max_scale)
{
	memset(h, 0, sizeof(*h));
	h->scale = max_scale;
}

void hist_exp__reset(struct hist_exp *h, int32_t max_scale)
{
	struct hist_exp_buckets pos = h->pos, neg = h->neg;

	hist_exp__init(h, max_scale);
	pos.n = neg.n = 0;
	pos.offset = neg.offset = 0;
	h->pos = pos;
	h->neg = neg;
}

static uint64_t width_max(uint8_t width)
{
	return width >= 8 ? UINT64_MAX : (1ULL << (8 * width)) - 1;
}

static uint64_t bget(const struct hist_exp_buckets *b, uint32_t i)
{
	return hist_exp__count_at(b->counts, b->width, i);
}

static void bset(struct hist_exp_buckets *b, uint32_t i, uint64_t v)
{
	switch (b->width) {
	case 1:
		((uint8_t *)b->counts)[i] = (uint8_t)v;
		break;
	case 2:
		((uint16_t *)b->counts)[i] = (uint16_t)v;
		break;
	case 4:
		((uint32_t *)b->counts)[i] = (uint32_t)v;
		break;
	default:
		((uint64_t *)b->counts)[i] = v;
		break;
	}
}

/* Counts wide enough for v; returns bytes newly allocated or -ENOMEM. */
static long widen_for(struct hist_exp_buckets *b, uint64_t v)
{
	uint8_t w = b->width;
	void *p;

	while (v > width_max(w))
		w *= 2;
	if (w == b->width)
		return 0;
	p = calloc(b->cap, w);
	if (!p)
		return -ENOMEM;
	for (uint32_t i = 0; i < b->n; i++) {
		uint64_t c = bget(b, i);

		switch (w) {
		case 2:
			((uint16_t *)p)[i] = (uint16_t)c;
			break;
		case 4:
			((uint32_t *)p)[i] = (uint32_t)c;
			break;
		default:
			((uint64_t *)p)[i] = c;
			break;
		}
	}
	free(b->counts);
	b->counts = p;
	b->width = w;
	return (long)b->cap * (w - (w / 2));
}

size_t hist_exp__free(struct hist_exp *h)
{
	size_t bytes = (size_t)h->pos.cap * h->pos.width +
		       (size_t)h->neg.cap * h->neg.width;

	free(h->pos.counts);
	free(h->neg.counts);
	h->pos = (struct hist_exp_buckets){ 0 };
	h->neg = (struct hist_exp_buckets){ 0 };
	return bytes;
}

/* Returns bytes newly allocated (wider counts) or -ENOMEM. */
static long buckets_downscale(struct hist_exp_buckets *b, int32_t change)
{
	int64_t lo;
	uint32_t i, j = 0;
	long grown = 0, g;

	if (!b->n)
		return 0;
	lo = floor_shift(b->offset, change);
	/* j <= i always, so an ascending in-place merge never clobbers */
	for (i = 0; i < b->n; i++) {
		uint64_t c = bget(b, i), sum;

		j = (uint32_t)(floor_shift((int64_t)b->offset + i, change) -
			       lo);
		bset(b, i, 0);
		sum = bget(b, j) + c;
		if (sum > width_max(b->width)) {
			g = widen_for(b, sum);
			if (g < 0) {
				/* keep the total right at the cost of the shape */
				bset(b, j, width_max(b->width));
				continue;
			}
			grown += g;
		}
		bset(b, j, sum);
	}
	b->n = j + 1;
	b->offset = (int32_t)lo;
	return grown;
}

/* Returns bytes newly allocated (merged counts may need wider ones). */
static long downscale(struct hist_exp *h, int32_t change)
{
	long grown;

	if (change <= 0)
		return 0;
	grown = buckets_downscale(&h->pos, change);
	grown += buckets_downscale(&h->neg, change);
	h->scale -= change;
	return grown;
}

void hist_exp__downscale(struct hist_exp *h, int32_t change)
{
	downscale(h, change);
}

/* How far the scale must drop for index idx to fit next to the others. */
static int32_t needed_change(const struct hist_exp_buckets *b, int64_t idx,
			     int32_t scale, uint32_t max_buckets)
{
	int64_t lo, hi;
	int32_t change = 0;

	if (!b->n)
		return 0;
	lo = idx < b->offset ? idx : b->offset;
	hi = (int64_t)b->offset + b->n - 1;
	if (idx > hi)
		hi = idx;
	while (hi - lo + 1 > max_buckets &&
	       scale - change > HIST_EXP_MIN_SCALE) {
		lo = floor_shift(lo, 1);
		hi = floor_shift(hi, 1);
		change++;
	}
	return change;
}

/* Make room for idx; returns bytes allocated or -ENOMEM. */
static long buckets_make_room(struct hist_exp_buckets *b, int32_t idx,
			      uint32_t max_buckets)
{
	int64_t lo, hi;
	uint32_t need, cap, shift;
	long grown = 0;

	if (!b->n) {
		lo = hi = idx;
	} else {
		lo = idx < b->offset ? idx : b->offset;
		hi = (int64_t)b->offset + b->n - 1;
		if (idx > hi)
			hi = idx;
	}
	need = (uint32_t)(hi - lo + 1);
	if (!b->width)
		b->width = 1;
	if (need > b->cap) {
		void *p;

		cap = b->cap ? b->cap : 4;
		while (cap < need)
			cap *= 2;
		if (cap > max_buckets)
			cap = max_buckets > need ? max_buckets : need;
		p = realloc(b->counts, (size_t)cap * b->width);
		if (!p)
			return -ENOMEM;
		grown = (long)(cap - b->cap) * b->width;
		b->counts = p;
		b->cap = cap;
	}
	if (!b->n) {
		b->offset = idx;
		bset(b, 0, 0);
		b->n = 1;
		return grown;
	}
	if (lo < b->offset) {
		char *c = b->counts;

		shift = (uint32_t)(b->offset - lo);
		memmove(c + (size_t)shift * b->width, c,
			(size_t)b->n * b->width);
		memset(c, 0, (size_t)shift * b->width);
		b->n += shift;
		b->offset = (int32_t)lo;
	}
	if (hi >= (int64_t)b->offset + b->n) {
		uint32_t n = (uint32_t)(hi - b->offset + 1);

		memset((char *)b->counts + (size_t)b->n * b->width, 0,
		       (size_t)(n - b->n) * b->width);
		b->n = n;
	}
	return grown;
}

long hist_exp__observe(struct hist_exp *h, double v, uint32_t max_buckets)
{
	struct hist_exp_buckets *b;
	int64_t idx;
	int32_t change;
	long grown = 0, g;
	uint64_t c;

	if (!isfinite(v))
		return 0;
	if (!max_buckets)
		max_buckets = HIST_EXP_DEFAULT_MAX_BUCKETS;
	if (v != 0) {
		b = v > 0 ? &h->pos : &h->neg;
		idx = hist_exp__index(fabs(v), h->scale);
		change = needed_change(b, idx, h->scale, max_buckets);
		if (change) {
			grown = downscale(h, change);
			idx = floor_shift(idx, change);
		}
		g = buckets_make_room(b, (int32_t)idx, max_buckets);
		if (g < 0)
			return g;
		grown += g;
		c = bget(b, (uint32_t)(idx - b->offset)) + 1;
		if (c > width_max(b->width)) {
			g = widen_for(b, c);
			if (g < 0)
				return g;
			grown += g;
		}
		bset(b, (uint32_t)(idx - b->offset), c);
	} else {
		h->zero_count++;
	}
	if (!h->count || v < h->min)
		h->min = v;
	if (!h->count || v > h->max)
		h->max = v;
	h->count++;
	h->sum += v;
	return grown;
}
