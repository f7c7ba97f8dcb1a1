/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The hot-path CEL expressions (what the seed's policies evaluate per
 * request) with their expected results, and the activation they run
 * against: shared by the no-allocation unit test and bin/bench_cel.
 */
#ifndef MM_TEST_CEL_HOT_H
#define MM_TEST_CEL_HOT_H

#include <string.h>

#include "policy/cel/cel.h"
#include "policy/source/doc.h"

#ifndef CEL_ALL_VARS /* as test_cel_helpers.h */
#define CEL_ALL_VARS                                                           \
	(CEL_VAR_VALUE | CEL_VAR_ATTRIBUTES | CEL_VAR_RESOURCE | CEL_VAR_ITEM)
#endif

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
	{ "[1, 2, value] + [3.0]",
	  "list:[int:1, int:2, double:1500, double:3]" },
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

#endif /* MM_TEST_CEL_HOT_H */
