// SPDX-License-Identifier: Apache-2.0
/* agent/config/features.c: Kubernetes feature-gate syntax, stages, run-time changes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config/features.h"
#include "policy/source/doc.h"
#include "selftests/unit/test.h"

/* A registry with every stage, so GA and deprecated rules are exercised. */
static const struct feature_spec specs[] = {
	{ .name = "AlphaOff", .stage = FEATURE_ALPHA, .def = false },
	{ .name = "BetaOn", .stage = FEATURE_BETA, .def = true },
	{ .name = "Done",
	  .stage = FEATURE_GA,
	  .def = true,
	  .lock_to_default = true },
	{ .name = "Old", .stage = FEATURE_DEPRECATED, .def = false },
};
#define NSPECS (sizeof(specs) / sizeof(specs[0]))

struct warns {
	int n;
	char last[256];
};

static void on_warn(void *ctx, const char *msg)
{
	struct warns *w = ctx;

	w->n++;
	snprintf(w->last, sizeof(w->last), "%s", msg);
}

TEST(features_defaults_match_the_issue)
{
	struct features *f =
		features__new(features__default_specs, FEATURE__COUNT);
	const struct feature_spec *tls, *h2;

	ASSERT_TRUE(f);
	tls = features__spec(f, FEATURE_TLS_CAPTURE);
	h2 = features__spec(f, FEATURE_HTTP2);
	ASSERT_STREQ(tls->name, "TLSCapture");
	ASSERT_EQ(tls->stage, FEATURE_ALPHA);
	ASSERT_EQ(features__enabled(f, FEATURE_TLS_CAPTURE), false);
	ASSERT_STREQ(h2->name, "HTTP2");
	/* Alpha is off by default; Beta would be on (Kubernetes' rule) */
	ASSERT_EQ(h2->def, h2->stage != FEATURE_ALPHA);
	ASSERT_EQ(features__enabled(f, FEATURE_HTTP2), h2->def);
	ASSERT_EQ(features__lookup(f, "HTTP2"), FEATURE_HTTP2);
	ASSERT_EQ(features__lookup(f, "http2"),
		  -1); /* names are case-sensitive */
	features__free(f);
}

TEST(features_parse_kubernetes_syntax)
{
	struct feature_overrides ov = {};
	char err[256];

	ASSERT_EQ(features__parse(specs, NSPECS,
				  " AlphaOff = TRUE , BetaOn=false,,", &ov, err,
				  sizeof(err)),
		  0);
	ASSERT_EQ(ov.set, 0x3);
	ASSERT_EQ(ov.val, 0x1);
	/* a later value for the same gate wins */
	ASSERT_EQ(features__parse(specs, NSPECS, "AlphaOff=False", &ov, err,
				  sizeof(err)),
		  0);
	ASSERT_EQ(ov.set, 0x3);
	ASSERT_EQ(ov.val, 0x0);
	ASSERT_EQ(features__parse(specs, NSPECS, "", &ov, err, sizeof(err)), 0);
	ASSERT_EQ(ov.set, 0x3);
}

TEST(features_parse_errors_name_what_to_fix)
{
	struct feature_overrides ov = { .set = 0x4, .val = 0x4 };
	char err[256];

	ASSERT_EQ(features__parse(specs, NSPECS, "AlphaOff=true,Nope=true", &ov,
				  err, sizeof(err)),
		  -EINVAL);
	ASSERT_TRUE(strstr(err, "\"Nope\"") &&
			    strstr(err, "AlphaOff, BetaOn, Done, Old"),
		    "%s", err);
	/* a failed parse leaves the overrides untouched */
	ASSERT_EQ(ov.set, 0x4);
	ASSERT_EQ(features__parse(specs, NSPECS, "AlphaOff", &ov, err,
				  sizeof(err)),
		  -EINVAL);
	ASSERT_TRUE(strstr(err, "missing =true or =false"), "%s", err);
	ASSERT_EQ(features__parse(specs, NSPECS, "AlphaOff=1", &ov, err,
				  sizeof(err)),
		  -EINVAL);
	ASSERT_TRUE(strstr(err, "must be true or false"), "%s", err);
	ASSERT_EQ(features__parse(specs, NSPECS, "AlphaOff=yes", &ov, err,
				  sizeof(err)),
		  -EINVAL);
	ASSERT_EQ(features__parse(specs, NSPECS, "=true", &ov, err,
				  sizeof(err)),
		  -EINVAL);
}

TEST(features_config_map)
{
	static const char yaml[] = "featureGates:\n"
				   "  AlphaOff: true\n"
				   "  Old: false\n";
	static const char bad[] = "featureGates:\n  AlphaOff: \"yes\"\n";
	static const char unknown[] = "featureGates:\n  Typo: true\n";
	struct feature_overrides ov = {};
	struct doc_file *df = NULL;
	char err[256];

	ASSERT_EQ(doc__parse_buf("cfg.yaml", yaml, sizeof(yaml) - 1, &df, err,
				 sizeof(err)),
		  0);
	ASSERT_EQ(features__parse_node(specs, NSPECS,
				       doc__get(df->docs[0], "featureGates"),
				       &ov, err, sizeof(err)),
		  0);
	doc__free_file(df);
	ASSERT_EQ(ov.set, 0x9);
	ASSERT_EQ(ov.val, 0x1);

	ASSERT_EQ(doc__parse_buf("cfg.yaml", bad, sizeof(bad) - 1, &df, err,
				 sizeof(err)),
		  0);
	ASSERT_EQ(features__parse_node(specs, NSPECS,
				       doc__get(df->docs[0], "featureGates"),
				       &ov, err, sizeof(err)),
		  -EINVAL);
	doc__free_file(df);
	ASSERT_TRUE(strstr(err, "cfg.yaml:2") && strstr(err, "AlphaOff"), "%s",
		    err);

	ASSERT_EQ(doc__parse_buf("cfg.yaml", unknown, sizeof(unknown) - 1, &df,
				 err, sizeof(err)),
		  0);
	ASSERT_EQ(features__parse_node(specs, NSPECS,
				       doc__get(df->docs[0], "featureGates"),
				       &ov, err, sizeof(err)),
		  -EINVAL);
	doc__free_file(df);
	ASSERT_TRUE(strstr(err, "Typo") && strstr(err, "known gates"), "%s",
		    err);
}

TEST(features_flags_override_config)
{
	struct features *f = features__new(specs, NSPECS);
	struct feature_overrides cfg = {}, flags = {};
	char err[128];

	ASSERT_TRUE(f);
	ASSERT_EQ(features__parse(specs, NSPECS, "AlphaOff=true,BetaOn=false",
				  &cfg, err, sizeof(err)),
		  0);
	ASSERT_EQ(features__parse(specs, NSPECS, "AlphaOff=false", &flags, err,
				  sizeof(err)),
		  0);
	ASSERT_EQ(features__apply(f, &cfg, &flags),
		  1); /* only BetaOn changed */
	ASSERT_EQ(features__enabled(f, 0), false);
	ASSERT_EQ(features__enabled(f, 1), false);
	features__free(f);
}

TEST(features_ga_is_locked_with_a_warning)
{
	struct features *f = features__new(specs, NSPECS);
	struct feature_overrides flags = {};
	struct warns w = {};
	char err[128];

	ASSERT_TRUE(f);
	features__set_warn(f, on_warn, &w);
	ASSERT_EQ(features__parse(specs, NSPECS, "Done=false", &flags, err,
				  sizeof(err)),
		  0);
	ASSERT_EQ(features__apply(f, NULL, &flags), 0);
	ASSERT_EQ(features__enabled(f, 2), true);
	ASSERT_EQ(w.n, 1);
	ASSERT_TRUE(strstr(w.last, "Done") && strstr(w.last, "locked"), "%s",
		    w.last);
	/* setting a deprecated gate works and warns */
	flags = (struct feature_overrides){};
	ASSERT_EQ(features__parse(specs, NSPECS, "Old=true", &flags, err,
				  sizeof(err)),
		  0);
	ASSERT_EQ(features__apply(f, NULL, &flags), 1);
	ASSERT_EQ(features__enabled(f, 3), true);
	ASSERT_EQ(w.n, 2);
	ASSERT_TRUE(strstr(w.last, "deprecated"), "%s", w.last);
	features__free(f);
}

struct recorder {
	int calls;
	int gate[8];
	bool on[8];
	int fail_gate; /* -1: never fail */
};

static int record(void *ctx, int gate, bool on)
{
	struct recorder *r = ctx;

	if (r->calls < 8) {
		r->gate[r->calls] = gate;
		r->on[r->calls] = on;
	}
	r->calls++;
	return gate == r->fail_gate && on ? -ENOENT : 0;
}

TEST(features_reload_notifies_changes_only)
{
	struct features *f = features__new(specs, NSPECS);
	struct feature_overrides cfg = {};
	struct recorder all = { .fail_gate = -1 }, one = { .fail_gate = -1 };
	char err[128];

	ASSERT_TRUE(f);
	ASSERT_EQ(features__subscribe(f, -1, record, &all), 0);
	ASSERT_EQ(features__subscribe(f, 0, record, &one), 0);
	ASSERT_EQ(features__subscribe(f, 9, record, &one), -EINVAL);
	/* start: defaults, nothing changes, nobody is called */
	ASSERT_EQ(features__apply(f, NULL, NULL), 0);
	ASSERT_EQ(all.calls, 0);
	/* reload turns AlphaOff on */
	ASSERT_EQ(features__parse(specs, NSPECS, "AlphaOff=true", &cfg, err,
				  sizeof(err)),
		  0);
	ASSERT_EQ(features__apply(f, &cfg, NULL), 1);
	ASSERT_EQ(all.calls, 1);
	ASSERT_EQ(all.gate[0], 0);
	ASSERT_EQ(all.on[0], true);
	ASSERT_EQ(one.calls, 1);
	/* the same config again: no change, no call */
	ASSERT_EQ(features__apply(f, &cfg, NULL), 0);
	ASSERT_EQ(all.calls, 1);
	/* the gate removed from the config: back to its default, off */
	ASSERT_EQ(features__apply(f, NULL, NULL), 1);
	ASSERT_EQ(all.calls, 2);
	ASSERT_EQ(all.on[1], false);
	ASSERT_EQ(features__enabled(f, 0), false);
	features__free(f);
}

TEST(features_failed_attach_keeps_the_gate_off)
{
	struct features *f = features__new(specs, NSPECS);
	struct feature_overrides cfg = {};
	struct recorder first = { .fail_gate = -1 },
			attach = { .fail_gate = 0 };
	struct warns w = {};
	char err[128];

	ASSERT_TRUE(f);
	features__set_warn(f, on_warn, &w);
	ASSERT_EQ(features__subscribe(f, -1, record, &first), 0);
	ASSERT_EQ(features__subscribe(f, -1, record, &attach), 0);
	ASSERT_EQ(features__parse(specs, NSPECS, "AlphaOff=true,BetaOn=false",
				  &cfg, err, sizeof(err)),
		  0);
	ASSERT_EQ(features__apply(f, &cfg, NULL), -ENOENT);
	/* AlphaOff failed: stays off, and the first subscriber was told to undo */
	ASSERT_EQ(features__enabled(f, 0), false);
	ASSERT_EQ(first.gate[0], 0);
	ASSERT_EQ(first.on[0], true);
	ASSERT_EQ(first.gate[1], 0);
	ASSERT_EQ(first.on[1], false);
	/* BetaOn still turned off: one failure does not block the others */
	ASSERT_EQ(features__enabled(f, 1), false);
	ASSERT_TRUE(strstr(w.last, "AlphaOff stays off"), "%s", w.last);
	features__free(f);
}

TEST(features_report_text_and_json)
{
	struct features *f =
		features__new(features__default_specs, FEATURE__COUNT);
	struct feature_overrides flags = {};
	char sum[256], *buf = NULL, err[128];
	size_t len = 0;
	FILE *out;

	ASSERT_TRUE(f);
	ASSERT_EQ(features__parse(features__default_specs, FEATURE__COUNT,
				  "TLSCapture=true", &flags, err, sizeof(err)),
		  0);
	ASSERT_EQ(features__apply(f, NULL, &flags), 1);
	features__summary(f, sum, sizeof(sum));
	ASSERT_STREQ(sum, "TLSCapture=true(ALPHA),HTTP2=false(ALPHA)");
	out = open_memstream(&buf, &len);
	ASSERT_TRUE(out);
	features__dump(f, out, true);
	fclose(out);
	ASSERT_TRUE(strstr(buf, "{\"name\":\"TLSCapture\",\"stage\":\"ALPHA\","
				"\"default\":false,\"enabled\":true"),
		    "%s", buf);
	free(buf);
	buf = NULL;
	out = open_memstream(&buf, &len);
	ASSERT_TRUE(out);
	features__dump(f, out, false);
	fclose(out);
	ASSERT_TRUE(strstr(buf, "TLSCapture     ALPHA      false    true"),
		    "%s", buf);
	free(buf);
	features__free(f);
}
