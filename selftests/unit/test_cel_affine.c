// SPDX-License-Identifier: Apache-2.0
/*
 * cel__affine() and the no-allocation property of cel__eval() (the
 * timing of the hot-path transforms is bin/bench_cel, `make bench`).
 */
#include <malloc.h>
#include <stdlib.h>

#include "selftests/unit/test_cel_helpers.h"
#include "selftests/unit/test_cel_hot.h"

static int affine_of(const char *expr, double *a, double *b)
{
	struct cel_program *p = cel__compile(expr, CEL_ALL_VARS, NULL);
	int r;

	if (!p)
		return -1;
	r = cel__affine(p, a, b);
	cel__free(p);
	return r;
}

TEST(cel_affine_detection)
{
	static const struct {
		const char *expr;
		double a, b;
	} yes[] = {
		{ "value", 1, 0 },
		{ "value / 1000.0", 0.001, 0 },
		{ "value * 2.0 + 1.0", 2, 1 },
		{ "1000.0 * value", 1000, 0 },
		{ "(value - 32.0) / 1.8", 1 / 1.8, -32 / 1.8 },
		{ "-value", -1, 0 },
		{ "2.0 * (value + 1.0) - value", 1, 2 },
		{ "double(value) * 2.0", 2, 0 },
		{ "value / (1000.0 * 60.0)", 1 / 60000.0, 0 },
		{ "3.5", 0, 3.5 },
	};
	static const char *const no[] = {
		"value * value",    "value / value",
		"value / 0.0",      "1.0 / value",
		"attributes['x']",  "value > 1.0 ? value : 0.0",
		"resource.x * 2.0", "double(int(value))",
		"value / 1000", /* does not compile: double / int */
	};
	struct cel_activation act = { 0 };
	double a, b;
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		ASSERT_EQ(affine_of(yes[i].expr, &a, &b), 1);
		ASSERT_NEAR(a, yes[i].a, 1e-12);
		ASSERT_NEAR(b, yes[i].b, 1e-12);
		/* the folded form agrees with evaluation */
		for (act.value = -5; act.value < 5000; act.value += 777.7) {
			struct cel_program *p =
				cel__compile(yes[i].expr, CEL_VAR_VALUE, NULL);
			struct cel_value v;

			ASSERT_TRUE(p);
			ASSERT_EQ(cel__eval(p, &act, &v, NULL), 0);
			ASSERT_NEAR(v.d, a * act.value + b,
				    1e-9 * (1 + fabs(v.d)));
			cel__free(p);
		}
	}
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		ASSERT_TRUE(affine_of(no[i], &a, &b) != 1, "%s", no[i]);
	ASSERT_EQ(affine_of("value / 1000", &a, &b), -1);
}

/*
 * cel__eval() has no malloc on its path (matches() with a computed pattern
 * excepted); this checks the heap does not move across many evaluations.
 */
TEST(cel_eval_does_not_allocate)
{
	struct cel_program *p[sizeof(hot) / sizeof(hot[0])];
	struct mallinfo2 before, after;
	struct bench_env e;
	struct cel_value v;
	char buf[256];
	size_t i;
	int k;

	ASSERT_EQ(bench_env(&e), 0);
	for (i = 0; i < sizeof(hot) / sizeof(hot[0]); i++) {
		p[i] = cel__compile(hot[i].expr, CEL_ALL_VARS, NULL);
		ASSERT_TRUE(p[i], "%s", hot[i].expr);
		ASSERT_EQ(cel__eval(p[i], &e.act, &v, NULL), 0);
		cel_test_repr(&v, buf, sizeof(buf));
		ASSERT_STREQ(buf, hot[i].want);
	}
	before = mallinfo2();
	for (k = 0; k < 100000; k++)
		for (i = 0; i < sizeof(hot) / sizeof(hot[0]); i++)
			if (cel__eval(p[i], &e.act, &v, NULL))
				break;
	after = mallinfo2();
	ASSERT_EQ(after.uordblks, before.uordblks);
	ASSERT_EQ(after.hblkhd, before.hblkhd);
	for (i = 0; i < sizeof(hot) / sizeof(hot[0]); i++)
		cel__free(p[i]);
	doc__free_file(e.f);
}
