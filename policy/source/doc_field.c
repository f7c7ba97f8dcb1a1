// SPDX-License-Identifier: Apache-2.0
/* Typed fields of a parsed document: see doc_field.h. */
#include <errno.h>

#include "policy/source/doc_field.h"

int doc_field__is(const struct doc_node *n, enum doc_kind kind)
{
	if (!n || n->kind == DOC_NULL)
		return 0;
	return n->kind == kind ? 1 : -EINVAL;
}

int doc_field__get(const struct doc_node *map, const char *key,
		   enum doc_kind kind, const struct doc_node **out)
{
	const struct doc_node *n = map ? doc__get(map, key) : NULL;
	int r = doc_field__is(n, kind);

	*out = r ? n : NULL;
	return r;
}

const char *doc_field__want(enum doc_kind kind)
{
	switch (kind) {
	case DOC_BOOL:
		return "true or false";
	case DOC_INT:
		return "an integer";
	case DOC_DOUBLE:
		return "a number";
	case DOC_STRING:
		return "a string";
	case DOC_LIST:
		return "a list";
	case DOC_MAP:
		return "a mapping";
	default:
		return "null";
	}
}
