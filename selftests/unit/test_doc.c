// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "policy/source/doc.h"
#include "selftests/unit/test.h"

static struct doc_file *parse(const char *y, char *err, size_t errlen, int *ret)
{
	struct doc_file *f = NULL;

	*ret = doc__parse_buf("t.yaml", y, strlen(y), &f, err, errlen);
	return f;
}

TEST(doc_scalars_and_lines)
{
	char err[256];
	int ret;
	struct doc_file *f =
		parse("a: 1\nb: \"1\"\nc: true\nd: ~\ne: 1.5\n"
		      "f: 'True'\ng: [x, 2]\nh: {k: v}\n---\nz: 0x1f\n",
		      err, sizeof(err), &ret);

	ASSERT_EQ(ret, 0);
	ASSERT_EQ(f->ndocs, 2);
	ASSERT_EQ(doc__get(f->docs[0], "a")->kind, DOC_INT);
	ASSERT_EQ(doc__get(f->docs[0], "a")->i, 1);
	ASSERT_STREQ(doc__str(f->docs[0], "b"), "1");
	ASSERT_EQ(doc__get(f->docs[0], "c")->kind, DOC_BOOL);
	ASSERT_EQ(doc__get(f->docs[0], "d")->kind, DOC_NULL);
	ASSERT_NEAR(doc__get(f->docs[0], "e")->d, 1.5, 0);
	ASSERT_STREQ(doc__str(f->docs[0], "f"), "True");
	ASSERT_EQ(doc__get(f->docs[0], "g")->list.n, 2);
	ASSERT_STREQ(doc__str(f->docs[0], "h.k"), "v");
	ASSERT_EQ(doc__get(f->docs[0], "h")->line, 8);
	ASSERT_EQ(doc__get(f->docs[1], "z")->i, 31);
	doc__free_file(f);

	/* strtoll() skips blanks and takes a sign: 0x 50 was 80 */
	f = parse("a: 0x 50\nb: 0x-5\nc: 0o17\nd: 0o8\ne: 0x\n", err,
		  sizeof(err), &ret);
	ASSERT_EQ(ret, 0);
	ASSERT_STREQ(doc__str(f->docs[0], "a"), "0x 50");
	ASSERT_STREQ(doc__str(f->docs[0], "b"), "0x-5");
	ASSERT_EQ(doc__get(f->docs[0], "c")->i, 15);
	ASSERT_STREQ(doc__str(f->docs[0], "d"), "0o8");
	ASSERT_STREQ(doc__str(f->docs[0], "e"), "0x");
	doc__free_file(f);
}

TEST(doc_errors_name_file_and_line)
{
	char err[256];
	int ret;
	struct doc_file *f = parse("a: 1\nb: [1, 2\n", err, sizeof(err), &ret);

	ASSERT_TRUE(!f);
	ASSERT_EQ(ret, -EINVAL);
	ASSERT_TRUE(!strncmp(err, "t.yaml:", 7), "%s", err);
	f = parse("a: 1\na: 2\n", err, sizeof(err), &ret);
	ASSERT_TRUE(!f && strstr(err, "duplicate key"), "%s", err);
	ASSERT_TRUE(strstr(err, "t.yaml:2:"), "%s", err);
}

TEST(doc_limits_depth_and_alias_bombs)
{
	char err[256], *deep = malloc(200001);
	int ret;
	struct doc_file *f;
	const char *bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
			   "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
			   "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
			   "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
			   "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
			   "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
			   "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n";

	ASSERT_TRUE(deep);
	memset(deep, '[', 100000);
	memset(deep + 100000, ']', 100000);
	deep[200000] = 0;
	f = parse(deep, err, sizeof(err), &ret);
	free(deep);
	ASSERT_TRUE(!f && ret == -EINVAL && strstr(err, "nested too deeply"),
		    "%s", err);
	f = parse(bomb, err, sizeof(err), &ret);
	ASSERT_TRUE(!f && strstr(err, "too large"), "%s", err);
}

TEST(doc_clone_and_build)
{
	char err[256];
	int ret;
	struct doc_file *f =
		parse("m: {a: [1, {b: c}]}\n", err, sizeof(err), &ret);
	struct doc_node *c, *m;

	ASSERT_EQ(ret, 0);
	c = doc__clone(doc__get(f->docs[0], "m"));
	doc__free_file(f);
	ASSERT_STREQ(doc__str(doc__get(c, "a")->list.items[1], "b"), "c");
	m = doc__new_map();
	ASSERT_EQ(doc__map_set(m, "uid", doc__new_str("x")), 0);
	ASSERT_EQ(doc__map_set(m, "uid", doc__new_str("y")), 0);
	ASSERT_STREQ(doc__str(m, "uid"), "y");
	ASSERT_EQ(m->map.n, 1);
	doc__free(m);
	doc__free(c);
}

/*
 * an anchor on a map key, or on a document that is only null, used
 * to point at a node freed right after; the alias then read freed memory.
 * Run under `make asan-unit` to see the use-after-free on the old code.
 */
TEST(doc_anchor_on_key_or_null_document)
{
	char err[256];
	int ret;
	struct doc_file *f;

	f = parse("&a foo: bar\nbaz: *a\n", err, sizeof(err), &ret);
	ASSERT_EQ(ret, 0);
	ASSERT_STREQ(doc__str(f->docs[0], "foo"), "bar");
	ASSERT_STREQ(doc__str(f->docs[0], "baz"), "foo");
	doc__free_file(f);

	f = parse("--- &a ~\n--- [*a, x]\n", err, sizeof(err), &ret);
	ASSERT_EQ(ret, 0);
	ASSERT_EQ(f->ndocs, 1);
	ASSERT_EQ(f->docs[0]->list.n, 2);
	ASSERT_EQ(f->docs[0]->list.items[0]->kind, DOC_NULL);
	doc__free_file(f);

	/* an alias as a key, and a redefined anchor: the latest wins */
	f = parse("a: &k key\n*k : 1\nb: &k other\nc: *k\n", err, sizeof(err),
		  &ret);
	ASSERT_EQ(ret, 0);
	ASSERT_EQ(doc__get(f->docs[0], "key")->i, 1);
	ASSERT_STREQ(doc__str(f->docs[0], "c"), "other");
	doc__free_file(f);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * duplicate-key and anchor lookups were linear scans, so a 1.4 MB
 * map of 100k keys took 19 s and 100k anchors + 20k aliases 6.8 s. The
 * bound is generous (sanitizer builds, a busy machine); linear is ~0.1 s.
 */
TEST(doc_many_keys_and_anchors_parse_in_linear_time)
{
	size_t n = 100000, cap = 64 * n, len = 0;
	char *y = malloc(cap), err[256];
	struct doc_file *f = NULL;
	double t0, keys_ms, anchors_ms;
	int ret;

	ASSERT_TRUE(y);
	for (size_t i = 0; i < n; i++)
		len += snprintf(y + len, cap - len, "key%07zu: v\n", i);
	t0 = now_ms();
	ret = doc__parse_buf("keys.yaml", y, len, &f, err, sizeof(err));
	keys_ms = now_ms() - t0;
	ASSERT_EQ(ret, 0);
	ASSERT_EQ(f->docs[0]->map.n, n);
	doc__free_file(f);

	len = snprintf(y, cap, "a:\n");
	for (size_t i = 0; i < n; i++)
		len += snprintf(y + len, cap - len, "- &a%zu x%zu\n", i, i);
	len += snprintf(y + len, cap - len, "b:\n");
	for (size_t i = 0; i < n / 5; i++)
		len += snprintf(y + len, cap - len, "- *a%zu\n", i * 5);
	t0 = now_ms();
	ret = doc__parse_buf("anchors.yaml", y, len, &f, err, sizeof(err));
	anchors_ms = now_ms() - t0;
	ASSERT_EQ(ret, 0);
	ASSERT_STREQ(doc__get(f->docs[0], "b")->list.items[3]->str.s, "x15");
	doc__free_file(f);
	free(y);
	test_log("100k keys: %.0f ms; 100k anchors + 20k aliases: %.0f ms\n",
		 keys_ms, anchors_ms);
	ASSERT_TRUE(keys_ms < 5000, "%.0f ms", keys_ms);
	ASSERT_TRUE(anchors_ms < 5000, "%.0f ms", anchors_ms);
}
