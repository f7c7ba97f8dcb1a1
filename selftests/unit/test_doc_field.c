// SPDX-License-Identifier: Apache-2.0
/* policy/source/doc_field.c: the typed-field check all readers share. */
#include <errno.h>

#include "policy/source/doc_field.h"
#include "selftests/unit/test.h"

TEST(doc_field_kinds)
{
	static const char y[] =
		"s: text\nn: ~\ni: 7\nl: [1]\nm: {a: 1}\nb: true\n";
	const struct doc_node *out, *root;
	struct doc_file *f = NULL;
	char err[256];

	if (!ASSERT_EQ(doc__parse_buf("t", y, sizeof(y) - 1, &f, err,
				      sizeof(err)),
		       0))
		return;
	root = f->docs[0];
	ASSERT_EQ(doc_field__get(root, "s", DOC_STRING, &out), 1);
	ASSERT_STREQ(out->str.s, "text");
	ASSERT_EQ(doc_field__get(root, "absent", DOC_STRING, &out), 0);
	ASSERT_TRUE(out == NULL);
	ASSERT_EQ(doc_field__get(root, "n", DOC_MAP, &out),
		  0); /* null = absent */
	ASSERT_EQ(doc_field__get(root, "i", DOC_STRING, &out), -EINVAL);
	ASSERT_TRUE(out && out->kind == DOC_INT); /* for the message */
	ASSERT_EQ(doc_field__get(root, "l", DOC_LIST, &out), 1);
	ASSERT_EQ(doc_field__get(root, "m", DOC_MAP, &out), 1);
	ASSERT_EQ(doc_field__get(root, "b", DOC_BOOL, &out), 1);
	ASSERT_EQ(doc_field__get(NULL, "s", DOC_STRING, &out), 0);
	ASSERT_EQ(doc_field__is(NULL, DOC_INT), 0);
	ASSERT_STREQ(doc_field__want(DOC_MAP), "a mapping");
	ASSERT_STREQ(doc_field__want(DOC_BOOL), "true or false");
	doc__free_file(f);
}
