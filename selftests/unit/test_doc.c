// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>

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
	struct doc_file *f = parse("a: 1\nb: \"1\"\nc: true\nd: ~\ne: 1.5\n"
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
	const char *bomb =
		"a: &a [x, x, x, x, x, x, x, x, x, x]\n"
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
	struct doc_file *f = parse("m: {a: [1, {b: c}]}\n", err, sizeof(err), &ret);
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
