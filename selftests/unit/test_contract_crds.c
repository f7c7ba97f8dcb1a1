// SPDX-License-Identifier: Apache-2.0
/*
 * deploy/kubernetes/crds/ must describe what the agent accepts: every seed example
 * validates against the CRD's openAPIV3Schema (a structural check: known
 * fields, types, required, enums) and an unknown field does not.
 */
#include "policy/source/doc.h"
#include "selftests/unit/test.h"
#include "selftests/unit/test_contract_util.h"

#define CRD_DEF                                                                \
	"deploy/kubernetes/crds/telemetry.miloapis.com_metricdefinitions.yaml"
#define CRD_POL                                                                \
	"deploy/kubernetes/crds/telemetry.miloapis.com_metricpolicies.yaml"

static bool validate(const struct doc_node *schema, const struct doc_node *v,
		     const char *path, char *why, size_t len)
{
	const char *type = doc__str(schema, "type");
	const struct doc_node *en = doc__get(schema, "enum");
	const struct doc_node *req = doc__get(schema, "required");

	if (!type) {
		snprintf(why, len, "%s: schema without type", path);
		return false;
	}
	if (!strcmp(type, "object")) {
		const struct doc_node *props = doc__get(schema, "properties");
		const struct doc_node *addl =
			doc__get(schema, "additionalProperties");

		if (v->kind != DOC_MAP) {
			snprintf(why, len, "%s: not an object", path);
			return false;
		}
		for (size_t i = 0; req && i < req->list.n; i++) {
			if (!doc__get(v, req->list.items[i]->str.s)) {
				snprintf(why, len, "%s: %s required", path,
					 req->list.items[i]->str.s);
				return false;
			}
		}
		for (size_t i = 0; i < v->map.n; i++) {
			const struct doc_node *sub =
				props ? doc__get(props, v->map.keys[i]) : NULL;
			char p[256];

			snprintf(p, sizeof(p), "%s.%s", path, v->map.keys[i]);
			if (!sub)
				sub = addl;
			if (!sub && !props && !addl)
				continue; /* free-form, like metadata */
			if (!sub) {
				snprintf(why, len, "%s: unknown field", p);
				return false;
			}
			if (!validate(sub, v->map.vals[i], p, why, len))
				return false;
		}
		return true;
	}
	if (!strcmp(type, "array")) {
		if (v->kind != DOC_LIST) {
			snprintf(why, len, "%s: not an array", path);
			return false;
		}
		for (size_t i = 0; i < v->list.n; i++)
			if (!validate(doc__get(schema, "items"),
				      v->list.items[i], path, why, len))
				return false;
		return true;
	}
	if (!strcmp(type, "string")) {
		bool found = !en;

		if (v->kind != DOC_STRING) {
			snprintf(why, len, "%s: not a string", path);
			return false;
		}
		for (size_t i = 0; en && i < en->list.n; i++)
			found |= !strcmp(en->list.items[i]->str.s, v->str.s);
		if (!found)
			snprintf(why, len, "%s: %s not in enum", path,
				 v->str.s);
		return found;
	}
	if (!strcmp(type, "boolean"))
		return v->kind == DOC_BOOL;
	if (!strcmp(type, "integer"))
		return v->kind == DOC_INT;
	snprintf(why, len, "%s: unexpected schema type %s", path, type);
	return false;
}

static const struct doc_node *load_schema(const char *crd, struct doc_file **f)
{
	const struct doc_node *versions;
	char err[256];

	if (doc__parse_file(crd, f, err, sizeof(err)))
		return NULL;
	if (strcmp(doc__str((*f)->docs[0], "kind"), "CustomResourceDefinition"))
		return NULL;
	versions = doc__path((*f)->docs[0], "spec.versions");
	if (!versions || versions->kind != DOC_LIST || !versions->list.n)
		return NULL;
	if (!doc__path(versions->list.items[0], "subresources.status"))
		return NULL;
	return doc__path(versions->list.items[0], "schema.openAPIV3Schema");
}

TEST(contract_crds_accept_every_seed_example)
{
	struct doc_file *fd = NULL, *fp = NULL;
	const struct doc_node *sd = load_schema(CRD_DEF, &fd);
	const struct doc_node *sp = load_schema(CRD_POL, &fp);
	struct tc_ctx t;
	const struct mobject *o = NULL;
	size_t n = 0;
	char why[512];

	ASSERT_TRUE(sd && sp);
	ASSERT_EQ(tc_open_seed(&t), 0);
	while ((o = manifest_source__next(t.src, NULL, o))) {
		const struct doc_node *s =
			!strcmp(o->kind, "MetricDefinition") ? sd : sp;

		why[0] = 0;
		ASSERT_TRUE(validate(s, o->root, o->name, why, sizeof(why)),
			    "%s:%u: %s", o->file, o->line, why);
		n++;
	}
	ASSERT_EQ(n, 15);
	tc_close(&t);
	doc__free_file(fd);
	doc__free_file(fp);
}

TEST(contract_crds_reject_unknown_fields)
{
	static const char *y =
		"apiVersion: telemetry.miloapis.com/v1alpha1\n"
		"kind: MetricDefinition\n"
		"metadata: {name: x}\n"
		"spec:\n"
		"  resource: {group: g, kind: K}\n"
		"  metric: {name: g.k.x, instrument: {type: Gauge, unit: \"1\", color: red}}\n";
	struct doc_file *fd = NULL, *f = NULL;
	const struct doc_node *sd = load_schema(CRD_DEF, &fd);
	char why[512], err[256];

	ASSERT_TRUE(sd);
	ASSERT_EQ(doc__parse_buf("x.yaml", y, strlen(y), &f, err, sizeof(err)),
		  0);
	ASSERT_TRUE(!validate(sd, f->docs[0], "x", why, sizeof(why)));
	ASSERT_TRUE(strstr(why, "color: unknown field"), "%s", why);
	doc__free_file(f);
	doc__free_file(fd);
}
