// SPDX-License-Identifier: Apache-2.0
/* OTLP per tenant: each request one tenant's points only, the tenant by
 * the series' bound object, and the split adding up to the unsplit export
 * (same points, same values). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/model/metric_store.h"
#include "exporter/otlp_encode.h"
#include "exporter/otlp_pb.h"
#include "exporter/otlp_tenancy.h"
#include "selftests/unit/test.h"

struct got {
	int requests;
	char tenant[8][32];   /* per request: header value */
	char attr[8][32];     /* per request: resource attribute */
	char points[256][64]; /* "tenant|label=value" */
	long long values[256];
	int npoints;
};

static bool ns_tenant(void *ctx, const char *subject, char *buf, size_t len)
{
	struct msubject s;
	char tmp[256];

	(void)ctx;
	if (!msubject__parse(subject, &s, tmp, sizeof(tmp)))
		return false;
	snprintf(buf, len, "t-%s", s.ns);
	return true;
}

static const char *kv(otlp_pb_kv **a, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(a[i]->key, key))
			return a[i]->value->string_value;
	return NULL;
}

static void record(struct got *g, void *buf, size_t len, const char *tenant)
{
	otlp_pb_request *r = otlp_pb_request__unpack(buf, len);

	free(buf);
	if (!r || r->n_resource_metrics != 1)
		return;
	for (size_t m = 0;
	     m < r->resource_metrics[0]->scope_metrics[0]->n_metrics; m++) {
		otlp_pb_metric *mt =
			r->resource_metrics[0]->scope_metrics[0]->metrics[m];

		for (size_t i = 0;
		     i < mt->sum->n_data_points && g->npoints < 256; i++) {
			otlp_pb_number_dp *p = mt->sum->data_points[i];

			snprintf(g->points[g->npoints], 64, "%s|%s=%s", tenant,
				 p->attributes[0]->key,
				 p->attributes[0]->value->string_value);
			g->values[g->npoints++] = p->as_int;
		}
	}
	if (g->requests < 8) {
		const char *a =
			kv(r->resource_metrics[0]->resource->attributes,
			   r->resource_metrics[0]->resource->n_attributes,
			   "milo.project");

		snprintf(g->attr[g->requests], 32, "%s", a ? a : "");
	}
	otlp_pb_request__free(r);
}

static int emit_split(void *ctx, void *buf, size_t len, size_t n,
		      const char *header)
{
	struct got *g = ctx;
	const char *v = header ? strchr(header, ':') : NULL;
	char t[32];

	(void)n;
	snprintf(t, sizeof(t), "%s", v ? v + 2 : "");
	if (g->requests < 8)
		snprintf(g->tenant[g->requests], 32, "%s", t);
	record(g, buf, len, t);
	g->requests++;
	return 0;
}

static int emit_plain(void *ctx, void *buf, size_t len, size_t n)
{
	struct got *g = ctx;

	(void)n;
	record(g, buf, len, "");
	g->requests++;
	return 0;
}

static int cmp_pt(const void *a, const void *b)
{
	return strcmp(strchr(a, '|'), strchr(b, '|'));
}

TEST(otlp_tenancy_split_adds_up)
{
	struct mmetric_desc d = { .name = "c",
				  .instrument = MI_COUNTER,
				  .is_int = true };
	struct mlabel res = { "host.name", "n1" };
	struct otlp_tenancy_opts to = { .resource = &res,
					.nresource = 1,
					.tenant = ns_tenant };
	struct mstore *s = mstore__new(NULL);
	struct otlp_encode_opts eo = { .resource = &res, .nresource = 1 };
	struct otlp_encoder *enc = otlp_encoder__new(&eo);
	struct otlp_tenancy *t;
	static struct got split, plain;
	const char *ns[] = { "a", "b", "a", NULL, "b", "c" };
	struct otlp_tenancy_stats st;
	int id;

	ASSERT_TRUE(s && enc);
	id = mstore__add_metric(s, &d);
	mstore__lock(s);
	for (int i = 0; i < 6; i++) {
		char v[16], subj[64];
		struct mlabel l = { "k", v };
		struct mseries *ser;

		snprintf(v, sizeof(v), "s%d", i);
		ser = mstore__series(s, id, &l, 1);
		if (ns[i]) {
			msubject__format(subj, sizeof(subj), "g", "r", ns[i],
					 v);
			ASSERT_EQ(mstore__bind(s, ser, subj), 0);
		}
		mseries__add(ser, 10 + i, 1);
	}
	mstore__unlock(s);
	/* no default tenant: the unbound series is dropped and counted */
	t = otlp_tenancy__new(&to);
	ASSERT_EQ(otlp_tenancy__export(t, s, 2, 0, emit_split, &split), 5);
	otlp_tenancy__stats(t, &st);
	ASSERT_EQ(st.dropped_points, 1);
	ASSERT_EQ(split.requests, 3);
	for (int i = 0; i < split.requests; i++)
		ASSERT_STREQ(split.tenant[i], split.attr[i]);
	for (int i = 0; i < split.npoints; i++) {
		/* s0,s2 -> t-a; s1,s4 -> t-b; s5 -> t-c */
		const char *p = split.points[i];
		int k = p[strlen(p) - 1] - '0';

		ASSERT_TRUE(!strncmp(p, "t-", 2) && p[2] == ns[k][0], "%s", p);
	}
	otlp_tenancy__free(t);
	/* with a default tenant, the sum over tenants is the unsplit export */
	memset(&split, 0, sizeof(split));
	to.default_tenant = "platform";
	to.header = "THANOS-TENANT";
	t = otlp_tenancy__new(&to);
	ASSERT_EQ(otlp_tenancy__export(t, s, 3, 2, emit_split, &split), 6);
	ASSERT_EQ(otlp_encode__store_split(enc, s, 3, 0, emit_plain, &plain),
		  6);
	ASSERT_EQ(split.npoints, plain.npoints);
	ASSERT_EQ(split.requests,
		  4); /* t-a (2 points), t-b (2), t-c, platform */
	qsort(split.points, split.npoints, 64, cmp_pt);
	qsort(plain.points, plain.npoints, 64, cmp_pt);
	for (int i = 0; i < plain.npoints; i++)
		ASSERT_STREQ(strchr(split.points[i], '|'),
			     strchr(plain.points[i], '|'));
	{
		long long a = 0, b = 0;

		for (int i = 0; i < plain.npoints; i++) {
			a += split.values[i];
			b += plain.values[i];
		}
		ASSERT_EQ(a, b);
	}
	otlp_tenancy__free(t);
	otlp_encoder__free(enc);
	mstore__free(s);
}
