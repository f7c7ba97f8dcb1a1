// SPDX-License-Identifier: Apache-2.0
/*
 * The translators' view of CEL (policy/cel/cel_shape.c) and the rescaled
 * bounds both the engine and the translations use: which expressions are
 * plain field selections, which value forms another system computes, and
 * what is refused.
 */
#include <errno.h>
#include <string.h>

#include "policy/cel/cel.h"
#include "policy/source/source_catalogue.h"
#include "selftests/unit/test.h"

#define ALL                                                                    \
	(CEL_VAR_VALUE | CEL_VAR_ATTRIBUTES | CEL_VAR_RESOURCE | CEL_VAR_ITEM)

static struct cel_program *compile(const char *src)
{
	struct cel_error err;
	struct cel_program *p = cel__compile(src, ALL, &err);

	if (!p)
		test__fail(__FILE__, __LINE__, "compile %s: %s", src, err.msg);
	return p;
}

/* the path as "var:a.b.[0].c", "" when not a path */
static void path_str(const char *src, char *out, size_t len)
{
	struct cel_program *p = compile(src);
	struct cel_step s[8];
	unsigned var = 0;
	int n = p ? cel__path(p, &var, s, 8) : -1;
	size_t o = 0;

	out[0] = 0;
	if (n >= 0) {
		o += snprintf(out + o, len - o, "%s:",
			      var == CEL_VAR_ATTRIBUTES ? "attributes"
			      : var == CEL_VAR_RESOURCE ? "resource"
							: "item");
		for (int i = 0; i < n && o < len; i++) {
			if (s[i].index)
				o += snprintf(out + o, len - o, "%s[%zu]",
					      i ? "." : "", s[i].len);
			else
				o += snprintf(out + o, len - o, "%s%.*s",
					      i ? "." : "", (int)s[i].len,
					      s[i].s);
		}
	}
	cel__free(p);
}

TEST(cel_shape_paths)
{
	char b[128];

	path_str("attributes['k8s.gateway.name']", b, sizeof(b));
	ASSERT_STREQ(b, "attributes:k8s.gateway.name");
	path_str("string(resource.metadata.uid)", b, sizeof(b));
	ASSERT_STREQ(b, "resource:metadata.uid");
	path_str("resource.spec.parentRefs[0].name", b, sizeof(b));
	ASSERT_STREQ(b, "resource:spec.parentRefs.[0].name");
	path_str("item.type", b, sizeof(b));
	ASSERT_STREQ(b, "item:type");
	/* computing is not selecting */
	path_str("attributes['a'] + 'x'", b, sizeof(b));
	ASSERT_STREQ(b, "");
	path_str("resource.metadata.name.startsWith('a') ? 'x' : 'y'", b,
		 sizeof(b));
	ASSERT_STREQ(b, "");
	path_str("value", b, sizeof(b));
	ASSERT_STREQ(b, "");
}

TEST(cel_shape_vars)
{
	struct cel_program *p =
		compile("resource.metadata.name + attributes['a']");

	ASSERT_EQ(cel__vars(p), CEL_VAR_RESOURCE | CEL_VAR_ATTRIBUTES);
	cel__free(p);
	p = compile("'gold'");
	ASSERT_EQ(cel__vars(p), 0);
	cel__free(p);
	p = compile("value / 1000.0");
	ASSERT_EQ(cel__vars(p), CEL_VAR_VALUE);
	cel__free(p);
}

TEST(cel_shape_values)
{
	static const struct {
		const char *src;
		enum cel_shape shape;
	} cases[] = {
		{ "1", CEL_SHAPE_ONE },
		{ "1.0", CEL_SHAPE_ONE },
		{ "item.status == 'True' ? 1 : 0", CEL_SHAPE_TRUE_FLAG },
		{ "int(timestamp(resource.metadata.creationTimestamp))",
		  CEL_SHAPE_NUMBER },
		{ "int(timestamp(item))", CEL_SHAPE_NUMBER },
		{ "double(item.replicas)", CEL_SHAPE_NUMBER },
		{ "item.replicas", CEL_SHAPE_NUMBER },
		/* int() of a double truncates: KSM would not */
		{ "int(item.ratio)", CEL_SHAPE_OTHER },
		{ "item.status == 'False' ? 1 : 0", CEL_SHAPE_OTHER },
		{ "item.status == 'True' ? 2 : 0", CEL_SHAPE_OTHER },
		{ "2", CEL_SHAPE_OTHER },
		{ "size(resource.spec.rules)", CEL_SHAPE_OTHER },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cel_program *p = compile(cases[i].src);
		struct cel_step s[8];
		unsigned var = 0;
		int n = -1;

		if (!p)
			continue;
		if (!ASSERT_EQ(cel__value_shape(p, &var, s, 8, &n),
			       cases[i].shape))
			test__fail(__FILE__, __LINE__, "for `%s`",
				   cases[i].src);
		cel__free(p);
	}
}

TEST(source_metrics_rescale)
{
	const struct source_metric *s =
		source_catalogue__find("envoy.cluster.upstream_rq_time");
	double out[64];

	ASSERT_TRUE(s != NULL);
	ASSERT_EQ(source_catalogue__rescale(s, 1 / 1000.0, 0, out, 64),
		  (long long)source_catalogue__envoy_nbounds);
	ASSERT_TRUE(out[0] == 0.5 * (1 / 1000.0));
	ASSERT_TRUE(out[18] == 3600000 * (1 / 1000.0));
	/* decreasing, flat and overflowing transforms keep no order */
	ASSERT_EQ(source_catalogue__rescale(s, -1, 0, out, 64), -EINVAL);
	ASSERT_EQ(source_catalogue__rescale(s, 0, 5, out, 64), -EINVAL);
	ASSERT_EQ(source_catalogue__rescale(s, 1e308, 0, out, 64), -EINVAL);
	ASSERT_TRUE(!source_catalogue__find("envoy.cluster.upstream_rq_bytes"));
	ASSERT_EQ(source_catalogue__rescale(
			  source_catalogue__find(
				  "envoy.cluster.upstream_rq_total"),
			  1, 0, out, 64),
		  -EINVAL);
}
