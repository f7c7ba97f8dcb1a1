// SPDX-License-Identifier: Apache-2.0
/*
 * CEL parse, check and evaluation. Input: the expression up to the first
 * newline, then YAML bound as `resource` (and its first list item, if
 * any, as `item`); `value` and `attributes` are fixed.
 */
#include "policy/cel/cel.h"
#include "policy/source/doc.h"
#include "selftests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct cel_attr attrs[] = {
		{ "envoy.cluster_name", "httproute/default/r/rule/0" },
		{ "k8s.gateway.name", "gw" },
		{ "pattern", "^h.*" },
	};
	const char *in = (const char *)data;
	const char *nl = memchr(in, '\n', size);
	size_t elen = nl ? (size_t)(nl - in) : size;
	char *expr = malloc(elen + 1);
	struct doc_file *f = NULL;
	struct cel_activation act = { .value = 2.5,
				      .attrs = attrs,
				      .nattrs = 3 };
	struct cel_program *p;
	struct cel_error err;
	char yerr[256];

	if (!expr)
		abort();
	memcpy(expr, in, elen);
	expr[elen] = 0;
	if (nl &&
	    !doc__parse_buf("r.yaml", nl + 1, size - elen - 1, &f, yerr,
			    sizeof(yerr)) &&
	    f->ndocs) {
		const struct doc_node *items = doc__get(f->docs[0], "items");

		act.resource = f->docs[0];
		if (items && items->kind == DOC_LIST && items->list.n)
			act.item = items->list.items[0];
	}
	p = cel__compile(expr,
			 CEL_VAR_VALUE | CEL_VAR_ATTRIBUTES | CEL_VAR_RESOURCE |
				 CEL_VAR_ITEM,
			 &err);
	if (p) {
		struct cel_value out;
		char s[256];
		double d, a, b;

		for (int i = 0; i < 2; i++) /* twice: cached state reused */
			if (!cel__eval(p, &act, &out, &err)) {
				cel__to_double(&out, &d);
				cel__to_string(&out, s, sizeof(s));
			}
		cel__affine(p, &a, &b);
		cel__free(p);
	} else if (!err.msg[0]) {
		abort(); /* every failure says why */
	}
	doc__free_file(f);
	free(expr);
	return 0;
}
