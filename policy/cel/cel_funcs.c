// SPDX-License-Identifier: Apache-2.0
/*
 * CEL standard functions (cel-spec langdef "List of Standard Definitions"):
 * size, type conversions, string predicates, matches, timestamps and
 * durations with their accessors. Each checks its run-time argument types
 * and answers "no matching overload" otherwise; the table also gives the
 * checker arities, call styles, accepted types and result types.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/cel/cel_impl.h"

#define NO_OVERLOAD(p, n, args)                                                \
	cel_impl__no_overload(p, (n)->col, (n)->fn->name, &(args)[0],          \
			      (n)->nargs > 1 ? &(args)[1] : NULL)

static void set_int(struct cel_value *out, int64_t i)
{
	out->type = CEL_INT;
	out->i = i;
}

static void set_bool(struct cel_value *out, bool b)
{
	out->type = CEL_BOOL;
	out->b = b;
}

static int fn_size(struct cel_program *p, const struct cel_node *n,
		   const struct cel_value *a, struct cel_value *out)
{
	size_t i, cps = 0;

	switch (a[0].type) {
	case CEL_STRING:
		/* code points: count bytes that do not continue a sequence */
		for (i = 0; i < a[0].str.len; i++)
			cps += ((unsigned char)a[0].str.s[i] & 0xc0) != 0x80;
		set_int(out, cps);
		return 0;
	case CEL_BYTES:
		set_int(out, a[0].str.len);
		return 0;
	case CEL_LIST:
	case CEL_MAP:
		set_int(out, cel_impl__agg_size(&a[0]));
		return 0;
	default:
		return NO_OVERLOAD(p, n, a);
	}
}

/* Copies a counted string into buf for strto*(); false if it will not fit. */
static bool cstr(const struct cel_value *v, char *buf, size_t len)
{
	if (v->str.len >= len || memchr(v->str.s, 0, v->str.len))
		return false;
	memcpy(buf, v->str.s, v->str.len);
	buf[v->str.len] = 0;
	return true;
}

static int bad_conv(struct cel_program *p, const struct cel_node *n,
		    const struct cel_value *v, const char *why)
{
	if (v->type == CEL_STRING)
		return cel_impl__fail(p, n->col,
				      "%s(): cannot convert '%.*s'%s",
				      n->fn->name,
				      (int)(v->str.len > 64 ? 64 : v->str.len),
				      v->str.s, why);
	return cel_impl__fail(p, n->col, "%s(): %s value out of range",
			      n->fn->name, cel_impl__type_name(v->type));
}

static int fn_int(struct cel_program *p, const struct cel_node *n,
		  const struct cel_value *a, struct cel_value *out)
{
	char buf[32], *end;
	long long v;

	switch (a[0].type) {
	case CEL_INT:
		*out = a[0];
		return 0;
	case CEL_UINT:
		if (a[0].u > INT64_MAX)
			return bad_conv(p, n, &a[0], "");
		set_int(out, (int64_t)a[0].u);
		return 0;
	case CEL_DOUBLE:
		if (!cel_impl__double_fits_int(a[0].d))
			return bad_conv(p, n, &a[0], "");
		set_int(out, (int64_t)a[0].d); /* truncates toward zero */
		return 0;
	case CEL_STRING:
		errno = 0;
		if (!cstr(&a[0], buf, sizeof(buf)) || !buf[0])
			return bad_conv(p, n, &a[0], "");
		v = strtoll(buf, &end, 10);
		if (*end || errno)
			return bad_conv(p, n, &a[0],
					" (want a decimal integer)");
		set_int(out, v);
		return 0;
	case CEL_TIMESTAMP:
		/* seconds since the epoch, rounded down like Go's Unix() */
		set_int(out, a[0].i / 1000000000 - (a[0].i % 1000000000 < 0));
		return 0;
	default:
		return NO_OVERLOAD(p, n, a);
	}
}

static int fn_uint(struct cel_program *p, const struct cel_node *n,
		   const struct cel_value *a, struct cel_value *out)
{
	char buf[32], *end;
	unsigned long long v;

	out->type = CEL_UINT;
	switch (a[0].type) {
	case CEL_UINT:
		*out = a[0];
		return 0;
	case CEL_INT:
		if (a[0].i < 0)
			return bad_conv(p, n, &a[0], "");
		out->u = a[0].i;
		return 0;
	case CEL_DOUBLE:
		if (!(a[0].d >= 0 && a[0].d < 18446744073709551616.0))
			return bad_conv(p, n, &a[0], "");
		out->u = (uint64_t)a[0].d;
		return 0;
	case CEL_STRING:
		errno = 0;
		if (!cstr(&a[0], buf, sizeof(buf)) || !buf[0] ||
		    buf[0] == '-' || buf[0] == '+')
			return bad_conv(p, n, &a[0], "");
		v = strtoull(buf, &end, 10);
		if (*end || errno)
			return bad_conv(p, n, &a[0],
					" (want a decimal integer)");
		out->u = v;
		return 0;
	default:
		return NO_OVERLOAD(p, n, a);
	}
}

static int fn_double(struct cel_program *p, const struct cel_node *n,
		     const struct cel_value *a, struct cel_value *out)
{
	char buf[128], *end;

	out->type = CEL_DOUBLE;
	switch (a[0].type) {
	case CEL_DOUBLE:
		*out = a[0];
		return 0;
	case CEL_INT:
		out->d = (double)a[0].i;
		return 0;
	case CEL_UINT:
		out->d = (double)a[0].u;
		return 0;
	case CEL_STRING:
		if (!cstr(&a[0], buf, sizeof(buf)) || !buf[0] || buf[0] == ' ')
			return bad_conv(p, n, &a[0], "");
		out->d = strtod(buf, &end);
		if (*end)
			return bad_conv(p, n, &a[0], " (want a number)");
		return 0;
	default:
		return NO_OVERLOAD(p, n, a);
	}
}

static bool valid_utf8(const unsigned char *s, size_t n)
{
	size_t i = 0, k, len;
	uint32_t cp;

	while (i < n) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		if ((s[i] & 0xe0) == 0xc0) {
			len = 2;
			cp = s[i] & 0x1f;
		} else if ((s[i] & 0xf0) == 0xe0) {
			len = 3;
			cp = s[i] & 0x0f;
		} else if ((s[i] & 0xf8) == 0xf0) {
			len = 4;
			cp = s[i] & 0x07;
		} else {
			return false;
		}
		if (i + len > n)
			return false;
		for (k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
		    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

static int fn_string(struct cel_program *p, const struct cel_node *n,
		     const struct cel_value *a, struct cel_value *out)
{
	char tmp[64], *s;
	int len;

	switch (a[0].type) {
	case CEL_STRING:
		*out = a[0];
		return 0;
	case CEL_BYTES:
		if (!valid_utf8((const unsigned char *)a[0].str.s,
				a[0].str.len))
			return cel_impl__fail(
				p, n->col,
				"string(): bytes are not valid UTF-8");
		*out = a[0];
		out->type = CEL_STRING;
		return 0;
	case CEL_BOOL:
	case CEL_INT:
	case CEL_UINT:
	case CEL_DOUBLE:
	case CEL_TIMESTAMP:
	case CEL_DURATION:
		len = cel_impl__fmt_value(&a[0], tmp, sizeof(tmp));
		if (len < 0 || len >= (int)sizeof(tmp))
			return NO_OVERLOAD(p, n, a);
		s = cel_impl__arena_alloc(p, len + 1);
		if (!s)
			return cel_impl__fail(p, n->col,
					      "expression result too large");
		memcpy(s, tmp, len + 1);
		out->type = CEL_STRING;
		out->str.s = s;
		out->str.len = len;
		return 0;
	default:
		return NO_OVERLOAD(p, n, a);
	}
}

static int fn_bytes(struct cel_program *p, const struct cel_node *n,
		    const struct cel_value *a, struct cel_value *out)
{
	if (a[0].type != CEL_STRING && a[0].type != CEL_BYTES)
		return NO_OVERLOAD(p, n, a);
	*out = a[0];
	out->type = CEL_BYTES;
	return 0;
}

static int fn_bool(struct cel_program *p, const struct cel_node *n,
		   const struct cel_value *a, struct cel_value *out)
{
	static const char *const t[] = { "1", "t", "true", "TRUE", "True" };
	static const char *const f[] = { "0", "f", "false", "FALSE", "False" };
	size_t i;

	if (a[0].type == CEL_BOOL) {
		*out = a[0];
		return 0;
	}
	if (a[0].type != CEL_STRING)
		return NO_OVERLOAD(p, n, a);
	for (i = 0; i < 5; i++) {
		if (strlen(t[i]) == a[0].str.len &&
		    !memcmp(t[i], a[0].str.s, a[0].str.len)) {
			set_bool(out, true);
			return 0;
		}
		if (strlen(f[i]) == a[0].str.len &&
		    !memcmp(f[i], a[0].str.s, a[0].str.len)) {
			set_bool(out, false);
			return 0;
		}
	}
	return bad_conv(p, n, &a[0], " (want true or false)");
}

static int fn_dyn(struct cel_program *p, const struct cel_node *n,
		  const struct cel_value *a, struct cel_value *out)
{
	*out = a[0];
	return 0;
}

static int fn_type(struct cel_program *p, const struct cel_node *n,
		   const struct cel_value *a, struct cel_value *out)
{
	out->type = CEL_TYPE;
	out->str.s = cel_impl__type_name(a[0].type);
	out->str.len = strlen(out->str.s);
	return 0;
}

static int fn_timestamp(struct cel_program *p, const struct cel_node *n,
			const struct cel_value *a, struct cel_value *out)
{
	int r;

	out->type = CEL_TIMESTAMP;
	switch (a[0].type) {
	case CEL_TIMESTAMP:
		*out = a[0];
		return 0;
	case CEL_INT:
		if (__builtin_mul_overflow(a[0].i, 1000000000LL, &out->i))
			return cel_impl__fail(p, n->col,
					      "timestamp(): out of range");
		return 0;
	case CEL_STRING:
		r = cel_impl__parse_timestamp(a[0].str.s, a[0].str.len,
					      &out->i);
		if (r == -ERANGE)
			return cel_impl__fail(
				p, n->col,
				"timestamp(): '%.*s' is outside the supported range 1677-09-21 to 2262-04-11",
				(int)(a[0].str.len > 64 ? 64 : a[0].str.len),
				a[0].str.s);
		if (r)
			return bad_conv(
				p, n, &a[0],
				" (want RFC 3339, e.g. 2024-01-02T15:04:05Z)");
		return 0;
	default:
		return NO_OVERLOAD(p, n, a);
	}
}

static int fn_duration(struct cel_program *p, const struct cel_node *n,
		       const struct cel_value *a, struct cel_value *out)
{
	int r;

	out->type = CEL_DURATION;
	if (a[0].type == CEL_DURATION) {
		*out = a[0];
		return 0;
	}
	if (a[0].type != CEL_STRING)
		return NO_OVERLOAD(p, n, a);
	r = cel_impl__parse_duration(a[0].str.s, a[0].str.len, &out->i);
	if (r == -ERANGE)
		return cel_impl__fail(
			p, n->col,
			"duration(): out of range (about +-292 years)");
	if (r)
		return bad_conv(p, n, &a[0], " (want e.g. 1h2m3.5s or 300ms)");
	return 0;
}

static int fn_strpred(struct cel_program *p, const struct cel_node *n,
		      const struct cel_value *a, struct cel_value *out)
{
	const struct cel_value *s = &a[0], *x = &a[1];
	char which = n->fn->name[0];

	if (s->type != CEL_STRING || x->type != CEL_STRING)
		return NO_OVERLOAD(p, n, a);
	if (x->str.len > s->str.len) {
		set_bool(out, false);
		return 0;
	}
	if (!x->str.len) {
		set_bool(out, true);
		return 0;
	}
	if (which == 's')
		set_bool(out, !memcmp(s->str.s, x->str.s, x->str.len));
	else if (which == 'e')
		set_bool(out, !memcmp(s->str.s + s->str.len - x->str.len,
				      x->str.s, x->str.len));
	else
		set_bool(out, memmem(s->str.s, s->str.len, x->str.s,
				     x->str.len) != NULL);
	return 0;
}

void cel_impl__regex_free(struct cel_regex *r)
{
	if (!r)
		return;
	regex__free(r->re);
	free(r->pat);
	free(r);
}

/*
 * RE2, as the CEL spec says matches() is. A literal pattern is compiled
 * once by cel__compile(); a computed one is recompiled when it changes,
 * which allocates. policy/regex/regex.h bounds the compilation.
 */
int cel_impl__regex_prepare(struct cel_regex *re, const char *pat, size_t len,
			    char *msg, size_t msglen)
{
	int r;

	if (re->pat && re->len == len && !memcmp(re->pat, pat, len))
		return re->ok ? 0 : -EINVAL;
	regex__free(re->re);
	re->re = NULL;
	re->ok = false;
	free(re->pat);
	re->pat = malloc(len + 1);
	re->len = len;
	if (!re->pat) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	memcpy(re->pat, pat, len);
	re->pat[len] = 0;
	r = regex__compile(pat, len, &re->re, msg, msglen);
	if (r)
		return r == -ENOMEM ? r : -EINVAL;
	re->ok = true;
	return 0;
}

static int fn_matches(struct cel_program *p, const struct cel_node *n,
		      const struct cel_value *a, struct cel_value *out)
{
	struct cel_regex *re = n->slot;
	char msg[256];

	if (a[0].type != CEL_STRING || a[1].type != CEL_STRING)
		return NO_OVERLOAD(p, n, a);
	if (cel_impl__regex_prepare(re, a[1].str.s, a[1].str.len, msg,
				    sizeof(msg)))
		return cel_impl__fail(
			p, n->col,
			"matches(): invalid regular expression: %s; the pattern: '%.*s%s'",
			msg, (int)(a[1].str.len > 64 ? 64 : a[1].str.len),
			a[1].str.s, a[1].str.len > 64 ? "..." : "");
	/* RE2 takes a counted string: NUL bytes in the subject are data */
	set_bool(out, regex__partial(re->re, a[0].str.s, a[0].str.len));
	return 0;
}

enum tm_field {
	F_YEAR,
	F_MONTH,
	F_DATE,
	F_MDAY,
	F_WDAY,
	F_YDAY,
	F_HOURS,
	F_MINUTES,
	F_SECONDS,
	F_MS,
};

static const struct {
	const char *name;
	enum tm_field f;
} tm_fields[] = {
	{ "getFullYear", F_YEAR },   { "getMonth", F_MONTH },
	{ "getDate", F_DATE },       { "getDayOfMonth", F_MDAY },
	{ "getDayOfWeek", F_WDAY },  { "getDayOfYear", F_YDAY },
	{ "getHours", F_HOURS },     { "getMinutes", F_MINUTES },
	{ "getSeconds", F_SECONDS }, { "getMilliseconds", F_MS },
};

static int fn_time_get(struct cel_program *p, const struct cel_node *n,
		       const struct cel_value *a, struct cel_value *out)
{
	enum tm_field f = F_YEAR;
	struct cel_tm tm;
	size_t i;

	for (i = 0; i < sizeof(tm_fields) / sizeof(tm_fields[0]); i++)
		if (!strcmp(tm_fields[i].name, n->fn->name))
			f = tm_fields[i].f;
	if (a[0].type == CEL_DURATION && n->nargs == 1) {
		/* durations: whole hours/minutes/seconds/ms, as cel-go */
		static const int64_t div[] = {
			[F_HOURS] = 3600000000000LL,
			[F_MINUTES] = 60000000000LL,
			[F_SECONDS] = 1000000000LL,
			[F_MS] = 1000000LL,
		};

		if (f < F_HOURS)
			return NO_OVERLOAD(p, n, a);
		set_int(out, a[0].i / div[f]);
		return 0;
	}
	if (a[0].type != CEL_TIMESTAMP ||
	    (n->nargs == 2 && a[1].type != CEL_STRING))
		return NO_OVERLOAD(p, n, a);
	if (cel_impl__timestamp_split(a[0].i, n->nargs == 2 ? a[1].str.s : NULL,
				      n->nargs == 2 ? a[1].str.len : 0, &tm))
		return cel_impl__fail(
			p, n->col,
			"%s(): time zone '%.*s' is not supported; use UTC or a fixed offset like +01:00",
			n->fn->name,
			(int)(a[1].str.len > 64 ? 64 : a[1].str.len),
			a[1].str.s);
	switch (f) {
	case F_YEAR:
		set_int(out, tm.year);
		break;
	case F_MONTH:
		set_int(out, tm.month);
		break;
	case F_DATE:
		set_int(out, tm.mday + 1);
		break;
	case F_MDAY:
		set_int(out, tm.mday);
		break;
	case F_WDAY:
		set_int(out, tm.wday);
		break;
	case F_YDAY:
		set_int(out, tm.yday);
		break;
	case F_HOURS:
		set_int(out, tm.hour);
		break;
	case F_MINUTES:
		set_int(out, tm.min);
		break;
	case F_SECONDS:
		set_int(out, tm.sec);
		break;
	case F_MS:
		set_int(out, tm.ms);
		break;
	}
	return 0;
}

#define S   TM(CEL_STRING)
#define TS  TM(CEL_TIMESTAMP)
#define DUR TM(CEL_DURATION)
#define NUM (TM(CEL_INT) | TM(CEL_UINT) | TM(CEL_DOUBLE))
#define TIMEGET(nm, extra)                                                     \
	{                                                                      \
		nm, true, false, 1, 2, CEL_INT, { TS | (extra), S },           \
			fn_time_get                                            \
	}

static const struct cel_func funcs[] = {
	{ "size",
	  true,
	  true,
	  1,
	  1,
	  CEL_INT,
	  { S | TM(CEL_BYTES) | TM(CEL_LIST) | TM(CEL_MAP) },
	  fn_size },
	{ "int", false, true, 1, 1, CEL_INT, { NUM | S | TS }, fn_int },
	{ "uint", false, true, 1, 1, CEL_UINT, { NUM | S }, fn_uint },
	{ "double", false, true, 1, 1, CEL_DOUBLE, { NUM | S }, fn_double },
	{ "string",
	  false,
	  true,
	  1,
	  1,
	  CEL_STRING,
	  { NUM | S | TM(CEL_BYTES) | TM(CEL_BOOL) | TS | DUR },
	  fn_string },
	{ "bytes",
	  false,
	  true,
	  1,
	  1,
	  CEL_BYTES,
	  { S | TM(CEL_BYTES) },
	  fn_bytes },
	{ "bool", false, true, 1, 1, CEL_BOOL, { S | TM(CEL_BOOL) }, fn_bool },
	{ "dyn", false, true, 1, 1, CEL_DYN, { TM_ANY }, fn_dyn },
	{ "type", false, true, 1, 1, CEL_TYPE, { TM_ANY }, fn_type },
	{ "timestamp",
	  false,
	  true,
	  1,
	  1,
	  CEL_TIMESTAMP,
	  { S | TS | TM(CEL_INT) },
	  fn_timestamp },
	{ "duration", false, true, 1, 1, CEL_DURATION, { S | DUR }, fn_duration },
	{ "startsWith", true, false, 2, 2, CEL_BOOL, { S, S }, fn_strpred },
	{ "endsWith", true, false, 2, 2, CEL_BOOL, { S, S }, fn_strpred },
	{ "contains", true, false, 2, 2, CEL_BOOL, { S, S }, fn_strpred },
	{ "matches", true, true, 2, 2, CEL_BOOL, { S, S }, fn_matches },
	TIMEGET("getFullYear", 0),
	TIMEGET("getMonth", 0),
	TIMEGET("getDate", 0),
	TIMEGET("getDayOfMonth", 0),
	TIMEGET("getDayOfWeek", 0),
	TIMEGET("getDayOfYear", 0),
	TIMEGET("getHours", DUR),
	TIMEGET("getMinutes", DUR),
	TIMEGET("getSeconds", DUR),
	TIMEGET("getMilliseconds", DUR),
};

const struct cel_func *cel_impl__func_lookup(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
		if (strlen(funcs[i].name) == len &&
		    !memcmp(funcs[i].name, name, len))
			return &funcs[i];
	return NULL;
}
