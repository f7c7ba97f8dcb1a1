/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers for the CEL tests: compile + evaluate one expression against a
 * fixture and render the result as "type:value" so that a test table reads
 * like the cel-spec conformance files.
 */
#ifndef MM_TEST_CEL_HELPERS_H
#define MM_TEST_CEL_HELPERS_H

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "policy/cel/cel.h"
#include "policy/cel/cel_impl.h"
#include "policy/source/doc.h"
#include "selftests/unit/test.h"

#define CEL_ALL_VARS                                                           \
	(CEL_VAR_VALUE | CEL_VAR_ATTRIBUTES | CEL_VAR_RESOURCE | CEL_VAR_ITEM)

static inline size_t cel_test_repr(const struct cel_value *v, char *buf,
				   size_t len);

static inline size_t cel_test_repr_agg(const struct cel_value *v, char *buf,
				       size_t len)
{
	size_t n = cel_impl__agg_size(v), i, off;
	struct cel_value k, e;

	off = snprintf(buf, len, "%s", v->type == CEL_LIST ? "[" : "{");
	for (i = 0; i < n && off < len; i++) {
		if (i)
			off += snprintf(buf + off, len - off, ", ");
		if (v->type == CEL_MAP) {
			cel_impl__agg_at(v, i, &k, &e);
			off += cel_test_repr(&k, buf + off, len - off);
			off += snprintf(buf + off, len - off, ": ");
		} else {
			cel_impl__agg_at(v, i, NULL, &e);
		}
		if (off < len)
			off += cel_test_repr(&e, buf + off, len - off);
	}
	if (off < len)
		off += snprintf(buf + off, len - off, "%s",
				v->type == CEL_LIST ? "]" : "}");
	return off;
}

static inline size_t cel_test_repr(const struct cel_value *v, char *buf,
				   size_t len)
{
	static const char *const tn[] = {
		[CEL_NULL] = "null",         [CEL_BOOL] = "bool",
		[CEL_INT] = "int",           [CEL_UINT] = "uint",
		[CEL_DOUBLE] = "double",     [CEL_STRING] = "string",
		[CEL_BYTES] = "bytes",       [CEL_LIST] = "list",
		[CEL_MAP] = "map",           [CEL_TIMESTAMP] = "timestamp",
		[CEL_DURATION] = "duration", [CEL_TYPE] = "type",
	};
	size_t off;
	int n;

	if (v->type == CEL_NULL)
		return snprintf(buf, len, "null");
	off = snprintf(buf, len, "%s:", tn[v->type]);
	if (off >= len)
		return off;
	if (v->type == CEL_LIST || v->type == CEL_MAP)
		return off + cel_test_repr_agg(v, buf + off, len - off);
	n = cel_impl__fmt_value(v, buf + off, len - off);
	return off + (n > 0 ? (size_t)n : 0);
}

/*
 * 0: evaluated, result in out; 1: compile error; 2: evaluation error.
 * On error out holds the message.
 */
static inline int cel_test_run(const char *expr, unsigned vars,
			       const struct cel_activation *act, char *out,
			       size_t len)
{
	struct cel_error err;
	struct cel_program *p = cel__compile(expr, vars, &err);
	struct cel_value v;
	int r;

	if (!p) {
		snprintf(out, len, "%s", err.msg);
		return 1;
	}
	r = cel__eval(p, act, &v, &err);
	if (r) {
		snprintf(out, len, "%s", err.msg);
		cel__free(p);
		return 2;
	}
	cel_test_repr(&v, out, len);
	cel__free(p);
	return 0;
}

/* The expression evaluates and renders as want, e.g. "int:3". */
#define CEL_EXPECT(act, expr, want)                                            \
	do {                                                                   \
		char _b[512];                                                  \
		int _r =                                                       \
			cel_test_run(expr, CEL_ALL_VARS, act, _b, sizeof(_b)); \
		if (_r || strcmp(_b, want)) {                                  \
			test__fail(__FILE__, __LINE__,                         \
				   "%s -> [%d] \"%s\", want \"%s\"", expr, _r, \
				   _b, want);                                  \
			return;                                                \
		}                                                              \
	} while (0)

/* kind 1: compile error, 2: evaluation error; message contains want. */
#define CEL_EXPECT_ERR(act, expr, kind, want)                                  \
	do {                                                                   \
		char _b[512];                                                  \
		int _r =                                                       \
			cel_test_run(expr, CEL_ALL_VARS, act, _b, sizeof(_b)); \
		if (_r != (kind) || !strstr(_b, want)) {                       \
			test__fail(                                            \
				__FILE__, __LINE__,                            \
				"%s -> [%d] \"%s\", want [%d] \"...%s...\"",   \
				expr, _r, _b, kind, want);                     \
			return;                                                \
		}                                                              \
	} while (0)

#endif /* MM_TEST_CEL_HELPERS_H */
