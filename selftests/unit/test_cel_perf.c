// SPDX-License-Identifier: Apache-2.0
/*
 * cel__affine(), the no-allocation property of cel__eval(), and a
 * micro-benchmark of the hot-path transforms (logged, not asserted).
 */
#include <malloc.h>
#include <stdlib.h>
#include <time.h>

#include "selftests/unit/test_cel_helpers.h"

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
		"value * value",
		"value / value",
		"value / 0.0",
		"1.0 / value",
		"attributes['x']",
		"value > 1.0 ? value : 0.0",
		"resource.x * 2.0",
		"double(int(value))",
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

struct bench_case {
	const char *expr;
	const char *want;
};

static const struct bench_case hot[] = {
	{ "value / 1000.0", "double:1.5" },
	{ "attributes['envoy.cluster_name']", "string:prod/web/80" },
	{ "item.status == 'True' ? 1 : 0", "int:1" },
	{ "string(resource.metadata.uid)", "string:0f0e" },
	{ "resource.metadata.namespace + '/' + resource.metadata.name",
	  "string:prod/web" },
	{ "int(timestamp(resource.metadata.creationTimestamp))",
	  "int:1234567890" },
	{ "string(value) + 's'", "string:1500s" },
	{ "[1, 2, value] + [3.0]", "list:[int:1, int:2, double:1500, double:3]" },
	{ "has(resource.metadata.labels) && 'app' in resource.metadata.labels",
	  "bool:true" },
};

struct bench_env {
	struct doc_file *f;
	struct cel_attr attrs[4];
	struct cel_activation act;
};

static int bench_env(struct bench_env *e)
{
	static const char y[] =
		"metadata:\n  name: web\n  namespace: prod\n  uid: \"0f0e\"\n"
		"  creationTimestamp: \"2009-02-13T23:31:30Z\"\n"
		"  labels: {app: shop}\n"
		"status: {conditions: [{type: Ready, status: \"True\"}]}\n";
	char err[256];
	int r = doc__parse_buf("b", y, strlen(y), &e->f, err, sizeof(err));

	if (r)
		return r;
	e->attrs[0] = (struct cel_attr){ "k8s.httproute.name", "web" };
	e->attrs[1] = (struct cel_attr){ "k8s.namespace.name", "prod" };
	e->attrs[2] = (struct cel_attr){ "k8s.gateway.name", "public-gw" };
	e->attrs[3] = (struct cel_attr){ "envoy.cluster_name", "prod/web/80" };
	e->act.value = 1500;
	e->act.attrs = e->attrs;
	e->act.nattrs = 4;
	e->act.resource = e->f->docs[0];
	e->act.item =
		doc__path(e->f->docs[0], "status.conditions")->list.items[0];
	return 0;
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

static double bench_one(struct cel_program *p, const struct cel_activation *a,
			int iters)
{
	struct timespec t0, t1;
	struct cel_value v;
	volatile double sink = 0;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < iters; i++) {
		cel__eval(p, a, &v, NULL);
		sink += v.type;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	(void)sink;
	return ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) /
	       iters;
}

TEST(cel_bench_hot_path)
{
	struct bench_env e;
	size_t i;

	ASSERT_EQ(bench_env(&e), 0);
	for (i = 0; i < sizeof(hot) / sizeof(hot[0]); i++) {
		struct cel_program *p =
			cel__compile(hot[i].expr, CEL_ALL_VARS, NULL);

		ASSERT_TRUE(p);
		bench_one(p, &e.act, 10000);
		test_log("%7.1f ns/eval  %s\n", bench_one(p, &e.act, 1000000),
			 hot[i].expr);
		cel__free(p);
	}
	doc__free_file(e.f);
}
