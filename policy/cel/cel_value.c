// SPDX-License-Identifier: Apache-2.0
/*
 * CEL values: binding doc_node trees and attributes, aggregate access,
 * equality and ordering, and string() formatting.
 *
 * Equality and ordering follow the current cel-spec (heterogeneous
 * equality, as cel-go implements it): int, uint and double compare by
 * numeric value across types (1 == 1.0, 1u < 2.5); values of other
 * differing types are unequal (never an error); NaN is unequal to
 * everything including itself and every ordering with NaN is false
 * (IEEE, as cel-go does; the older langdef said all NaNs are equal).
 * Ordering of other mixed types is "no matching overload".
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/cel/cel_impl.h"
#include "policy/source/doc.h"

const char *cel_impl__type_name(int t)
{
	static const char *const names[] = {
		[CEL_NULL] = "null_type",
		[CEL_BOOL] = "bool",
		[CEL_INT] = "int",
		[CEL_UINT] = "uint",
		[CEL_DOUBLE] = "double",
		[CEL_STRING] = "string",
		[CEL_BYTES] = "bytes",
		[CEL_LIST] = "list",
		[CEL_MAP] = "map",
		[CEL_TIMESTAMP] = "google.protobuf.Timestamp",
		[CEL_DURATION] = "google.protobuf.Duration",
		[CEL_TYPE] = "type",
	};

	if (t >= 0 && t <= CEL_TYPE)
		return names[t];
	return "dyn";
}

void cel_impl__from_doc(const struct doc_node *d, struct cel_value *v)
{
	switch (d->kind) {
	case DOC_BOOL:
		v->type = CEL_BOOL;
		v->b = d->b;
		return;
	case DOC_INT:
		v->type = CEL_INT;
		v->i = d->i;
		return;
	case DOC_DOUBLE:
		v->type = CEL_DOUBLE;
		v->d = d->d;
		return;
	case DOC_STRING:
		v->type = CEL_STRING;
		v->str.s = d->str.s;
		v->str.len = d->str.len;
		return;
	case DOC_LIST:
	case DOC_MAP:
		v->type = d->kind == DOC_LIST ? CEL_LIST : CEL_MAP;
		v->agg = CEL_AGG_DOC;
		v->node = d;
		return;
	default:
		v->type = CEL_NULL;
		return;
	}
}

size_t cel_impl__agg_size(const struct cel_value *v)
{
	switch (v->agg) {
	case CEL_AGG_DOC:
		return v->type == CEL_LIST ? v->node->list.n : v->node->map.n;
	case CEL_AGG_LIST:
		return ((const struct cel_list *)v->opaque)->n;
	case CEL_AGG_MAP:
		return ((const struct cel_map *)v->opaque)->n;
	case CEL_AGG_ATTRS:
		return ((const struct cel_attrs *)v->opaque)->n;
	}
	return 0;
}

static void set_cstr(struct cel_value *v, const char *s)
{
	v->type = CEL_STRING;
	v->str.s = s ? s : "";
	v->str.len = s ? strlen(s) : 0;
}

void cel_impl__agg_at(const struct cel_value *v, size_t i,
		      struct cel_value *key, struct cel_value *val)
{
	const struct cel_attrs *at;

	if (v->type == CEL_LIST) {
		if (v->agg == CEL_AGG_DOC)
			cel_impl__from_doc(v->node->list.items[i], val);
		else
			*val = ((const struct cel_list *)v->opaque)->v[i];
		return;
	}
	switch (v->agg) {
	case CEL_AGG_DOC:
		set_cstr(key, v->node->map.keys[i]);
		if (val)
			cel_impl__from_doc(v->node->map.vals[i], val);
		return;
	case CEL_AGG_MAP:
		*key = ((const struct cel_map *)v->opaque)->k[i];
		if (val)
			*val = ((const struct cel_map *)v->opaque)->v[i];
		return;
	default:
		at = v->opaque;
		set_cstr(key, at->a[i].key);
		if (val)
			set_cstr(val, at->a[i].value);
		return;
	}
}

/* A C-string key against a counted string that may hold NULs. */
static bool cstr_eq(const char *c, const struct cel_value *k)
{
	size_t i;

	if (!c)
		return false;
	for (i = 0; i < k->str.len; i++)
		if (!c[i] || c[i] != k->str.s[i])
			return false;
	return !c[i];
}

int cel_impl__map_find(const struct cel_value *m, const struct cel_value *key,
		       struct cel_value *val)
{
	const struct cel_attrs *at;
	const struct cel_map *bm;
	size_t i;

	switch (m->agg) {
	case CEL_AGG_DOC:
		/* YAML/JSON object keys are strings */
		if (key->type != CEL_STRING)
			return 0;
		for (i = 0; i < m->node->map.n; i++)
			if (cstr_eq(m->node->map.keys[i], key)) {
				cel_impl__from_doc(m->node->map.vals[i], val);
				return 1;
			}
		return 0;
	case CEL_AGG_ATTRS:
		if (key->type != CEL_STRING)
			return 0;
		at = m->opaque;
		for (i = 0; i < at->n; i++)
			if (cstr_eq(at->a[i].key, key)) {
				set_cstr(val, at->a[i].value);
				return 1;
			}
		return 0;
	default:
		bm = m->opaque;
		for (i = 0; i < bm->n; i++)
			if (cel_impl__equal(&bm->k[i], key)) {
				*val = bm->v[i];
				return 1;
			}
		return 0;
	}
}

static bool is_num(int t)
{
	return t == CEL_INT || t == CEL_UINT || t == CEL_DOUBLE;
}

/* Exact order of an integer (int or uint) against a double; 2 for NaN. */
static int int_vs_double(bool is_signed, int64_t i, uint64_t u, double d)
{
	double t;

	if (isnan(d))
		return 2;
	if (d >= 18446744073709551616.0 ||
	    (is_signed && d >= 9223372036854775808.0))
		return -1;
	if (d < -9223372036854775808.0 || (!is_signed && d < 0))
		return 1;
	/* d's integer part is representable: compare it, then the fraction */
	t = trunc(d);
	if (is_signed) {
		int64_t ti = (int64_t)t;

		if (i != ti)
			return i < ti ? -1 : 1;
	} else {
		uint64_t tu = (uint64_t)t;

		if (u != tu)
			return u < tu ? -1 : 1;
	}
	return d > t ? -1 : d < t ? 1 : 0;
}

/* Numeric order across int, uint and double; 2 when a NaN is involved. */
static int num_cmp(const struct cel_value *a, const struct cel_value *b)
{
	int c;

	if (a->type == CEL_DOUBLE && b->type == CEL_DOUBLE) {
		if (isnan(a->d) || isnan(b->d))
			return 2;
		return (a->d > b->d) - (a->d < b->d);
	}
	if (a->type == CEL_INT && b->type == CEL_INT)
		return (a->i > b->i) - (a->i < b->i);
	if (a->type == CEL_UINT && b->type == CEL_UINT)
		return (a->u > b->u) - (a->u < b->u);
	if (a->type == CEL_INT && b->type == CEL_UINT)
		return a->i < 0 ? -1
				: ((uint64_t)a->i > b->u) -
					  ((uint64_t)a->i < b->u);
	if (a->type == CEL_UINT && b->type == CEL_INT)
		return -num_cmp(b, a);
	if (b->type == CEL_DOUBLE)
		return int_vs_double(a->type == CEL_INT, a->i, a->u, b->d);
	c = int_vs_double(b->type == CEL_INT, b->i, b->u, a->d);
	return c == 2 ? 2 : -c;
}

static int bytes_cmp(const struct cel_value *a, const struct cel_value *b)
{
	size_t n = a->str.len < b->str.len ? a->str.len : b->str.len;
	int c = n ? memcmp(a->str.s, b->str.s, n) : 0;

	if (c)
		return c < 0 ? -1 : 1;
	return (a->str.len > b->str.len) - (a->str.len < b->str.len);
}

static int agg_equal(const struct cel_value *a, const struct cel_value *b)
{
	size_t n = cel_impl__agg_size(a), i;
	struct cel_value ka, va, vb;

	if (n != cel_impl__agg_size(b))
		return 0;
	for (i = 0; i < n; i++) {
		if (a->type == CEL_LIST) {
			cel_impl__agg_at(a, i, NULL, &va);
			cel_impl__agg_at(b, i, NULL, &vb);
		} else {
			cel_impl__agg_at(a, i, &ka, &va);
			if (!cel_impl__map_find(b, &ka, &vb))
				return 0;
		}
		if (!cel_impl__equal(&va, &vb))
			return 0;
	}
	return 1;
}

int cel_impl__equal(const struct cel_value *a, const struct cel_value *b)
{
	if (is_num(a->type) && is_num(b->type))
		return num_cmp(a, b) == 0;
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case CEL_NULL:
		return 1;
	case CEL_BOOL:
		return a->b == b->b;
	case CEL_STRING:
	case CEL_BYTES:
	case CEL_TYPE:
		return bytes_cmp(a, b) == 0;
	case CEL_TIMESTAMP:
	case CEL_DURATION:
		return a->i == b->i;
	case CEL_LIST:
	case CEL_MAP:
		return agg_equal(a, b);
	default:
		return 0;
	}
}

int cel_impl__compare(const struct cel_value *a, const struct cel_value *b,
		      int *cmp)
{
	if (is_num(a->type) && is_num(b->type)) {
		*cmp = num_cmp(a, b);
		return 0;
	}
	if (a->type != b->type)
		return CEL_E_OVERLOAD;
	switch (a->type) {
	case CEL_BOOL:
		*cmp = (a->b > b->b) - (a->b < b->b);
		return 0;
	case CEL_STRING: /* UTF-8 byte order is code point order */
	case CEL_BYTES:
		*cmp = bytes_cmp(a, b);
		return 0;
	case CEL_TIMESTAMP:
	case CEL_DURATION:
		*cmp = (a->i > b->i) - (a->i < b->i);
		return 0;
	default:
		return CEL_E_OVERLOAD;
	}
}

/*
 * Formats like Go's fmt "%g" (shortest digits that round-trip; exponent
 * form when the exponent is < -4 or >= 6, e.g. 1e+06), which is what
 * cel-go's string(double) uses.
 */
int cel_impl__fmt_double(double d, char *buf, size_t len)
{
	char tmp[40], digits[20], out[64];
	int prec, exp, nd = 0, n = 0, i;
	const char *s;
	bool neg;

	if (isnan(d))
		return snprintf(buf, len, "NaN");
	if (isinf(d))
		return snprintf(buf, len, d > 0 ? "+Inf" : "-Inf");
	if (d == 0)
		return snprintf(buf, len, signbit(d) ? "-0" : "0");
	/* range first: converting a double past int64 to int64 is UB */
	if (d > -1e6 && d < 1e6 && d == (double)(int64_t)d)
		return snprintf(buf, len, "%lld", (long long)d);
	/*
	 * Shortest round-trip digits: a double is within half an ulp (< 0.5e-15
	 * relative) of any decimal of <= 15 digits that reads back as it, so
	 * rounding to 15 digits and dropping trailing zeros finds that one;
	 * otherwise 16 or 17 digits are needed. Subnormals have fewer
	 * digits of precision, so for them search from 1.
	 */
	for (prec = fabs(d) < DBL_MIN ? 1 : 15; prec < 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	if (prec == 17)
		snprintf(tmp, sizeof(tmp), "%.16e", d);
	neg = tmp[0] == '-';
	for (s = tmp + neg; *s && *s != 'e'; s++)
		if (*s >= '0' && *s <= '9')
			digits[nd++] = *s;
	exp = atoi(s + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = 0;
	if (exp < -4 || exp >= 6)
		return snprintf(buf, len, "%s%c%s%se%c%02d", neg ? "-" : "",
				digits[0], nd > 1 ? "." : "", digits + 1,
				exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
	if (neg)
		out[n++] = '-';
	if (exp < 0) {
		out[n++] = '0';
		out[n++] = '.';
		for (i = -1; i > exp; i--)
			out[n++] = '0';
		memcpy(out + n, digits, nd);
		n += nd;
	} else {
		for (i = 0; i <= exp; i++)
			out[n++] = i < nd ? digits[i] : '0';
		if (nd > exp + 1) {
			out[n++] = '.';
			memcpy(out + n, digits + exp + 1, nd - exp - 1);
			n += nd - exp - 1;
		}
	}
	out[n] = 0;
	return snprintf(buf, len, "%s", out);
}

/*
 * string() of a scalar: returns the length (snprintf-style, may be >= len)
 * or CEL_E_OVERLOAD for types string() does not accept.
 */
int cel_impl__fmt_value(const struct cel_value *v, char *buf, size_t len)
{
	switch (v->type) {
	case CEL_BOOL:
		return snprintf(buf, len, "%s", v->b ? "true" : "false");
	case CEL_INT:
		return snprintf(buf, len, "%lld", (long long)v->i);
	case CEL_UINT:
		return snprintf(buf, len, "%llu", (unsigned long long)v->u);
	case CEL_DOUBLE:
		return cel_impl__fmt_double(v->d, buf, len);
	case CEL_STRING:
	case CEL_BYTES:
	case CEL_TYPE:
		return snprintf(buf, len, "%.*s", (int)v->str.len, v->str.s);
	case CEL_TIMESTAMP:
		return cel_impl__fmt_timestamp(v->i, buf, len);
	case CEL_DURATION:
		return cel_impl__fmt_duration(v->i, buf, len);
	default:
		return CEL_E_OVERLOAD;
	}
}

int cel__to_double(const struct cel_value *v, double *out)
{
	switch (v->type) {
	case CEL_DOUBLE:
		*out = v->d;
		return 0;
	case CEL_INT:
		*out = (double)v->i;
		return 0;
	case CEL_UINT:
		*out = (double)v->u;
		return 0;
	default:
		return -EINVAL;
	}
}

int cel__to_string(const struct cel_value *v, char *buf, size_t len)
{
	int n;

	if (!len)
		return -ENOSPC;
	if ((v->type == CEL_STRING || v->type == CEL_BYTES) &&
	    v->str.len >= len)
		return -ENOSPC;
	n = cel_impl__fmt_value(v, buf, len);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= len)
		return -ENOSPC;
	return n;
}
