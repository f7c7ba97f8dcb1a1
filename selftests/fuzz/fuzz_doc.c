// SPDX-License-Identifier: Apache-2.0
/* The YAML document tree: parse, copy, walk, free any input. */
#include "policy/source/doc.h"
#include "selftests/fuzz/fuzz_util.h"

static void walk(const struct doc_node *n, int depth)
{
	if (!n || depth > DOC_MAX_DEPTH + 1)
		abort(); /* the parser promised a bounded depth */
	if (n->kind == DOC_LIST)
		for (size_t i = 0; i < n->list.n; i++)
			walk(n->list.items[i], depth + 1);
	if (n->kind == DOC_MAP)
		for (size_t i = 0; i < n->map.n; i++) {
			if (doc__get(n, n->map.keys[i]) != n->map.vals[i])
				abort(); /* keys are unique */
			walk(n->map.vals[i], depth + 1);
		}
	if (n->kind == DOC_STRING && strlen(n->str.s) > n->str.len)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct doc_file *f = NULL;
	char err[512];

	if (doc__parse_buf("fuzz.yaml", (const char *)data, size, &f, err,
			   sizeof(err))) {
		if (!err[0] || f)
			abort(); /* every failure says why */
		return 0;
	}
	for (size_t i = 0; i < f->ndocs; i++) {
		struct doc_node *c = doc__clone(f->docs[i]);

		walk(f->docs[i], 0);
		if (c && doc__count(c, DOC_MAX_NODES) !=
				 doc__count(f->docs[i], DOC_MAX_NODES))
			abort();
		doc__str(f->docs[i], "metadata.name");
		doc__free(c);
	}
	doc__free_file(f);
	return 0;
}
