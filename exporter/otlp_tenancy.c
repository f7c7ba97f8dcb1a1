// SPDX-License-Identifier: Apache-2.0
/* OTLP export split per tenant: see otlp_tenancy.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/otlp_encode.h"
#include "exporter/otlp_tenancy.h"

#define TENANT_MAX   256
#define MAX_RESOURCE 32

struct tenant {
	char *name;
	struct otlp_encoder *enc;
};

struct otlp_tenancy {
	struct otlp_tenancy_opts o;
	struct mlabel res[MAX_RESOURCE]; /* copies of o.resource */
	struct otlp_tenancy_stats st;
	/* per export */
	struct tenant *tv;
	size_t nt, cap;
	struct mpoint_view *pv;
	size_t pcap;
	int err;
};

static struct tenant *tenant_get(struct otlp_tenancy *t, const char *name)
{
	struct mlabel res[MAX_RESOURCE + 1];
	struct otlp_encode_opts eo = {};
	size_t n = 0;

	for (size_t i = 0; i < t->nt; i++)
		if (!strcmp(t->tv[i].name, name))
			return &t->tv[i];
	if (t->nt == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 8;
		struct tenant *nv = realloc(t->tv, cap * sizeof(*nv));

		if (!nv)
			return NULL;
		t->tv = nv;
		t->cap = cap;
	}
	for (size_t i = 0; i < t->o.nresource && n < MAX_RESOURCE; i++)
		if (strcmp(t->o.resource[i].key, t->o.attribute))
			res[n++] = t->o.resource[i];
	res[n++] = (struct mlabel){ t->o.attribute, name };
	eo.resource = res;
	eo.nresource = n;
	t->tv[t->nt].name = strdup(name);
	t->tv[t->nt].enc = otlp_encoder__new(&eo);
	if (!t->tv[t->nt].name || !t->tv[t->nt].enc) {
		free(t->tv[t->nt].name);
		otlp_encoder__free(t->tv[t->nt].enc);
		return NULL;
	}
	return &t->tv[t->nt++];
}

/* One metric: its points grouped by tenant, each group into its encoder. */
static int split_metric(void *ctx, const struct mmetric_desc *desc,
			const struct mpoint_view *pts, size_t n)
{
	struct otlp_tenancy *t = ctx;
	char(*names)[TENANT_MAX];
	bool *done;
	int err = 0;

	if (!n)
		return 0;
	if (n > t->pcap) {
		struct mpoint_view *np = realloc(t->pv, n * sizeof(*np));

		if (!np)
			return -ENOMEM;
		t->pv = np;
		t->pcap = n;
	}
	names = malloc(n * sizeof(*names));
	done = calloc(n, sizeof(*done));
	if (!names || !done) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (pts[i].subject &&
		    t->o.tenant(t->o.ctx, pts[i].subject, names[i], TENANT_MAX))
			continue;
		if (t->o.default_tenant) {
			snprintf(names[i], TENANT_MAX, "%s",
				 t->o.default_tenant);
			continue;
		}
		done[i] = true;
		t->st.dropped_points++;
	}
	for (size_t i = 0; i < n && !err; i++) {
		struct tenant *tn;
		size_t k = 0;

		if (done[i])
			continue;
		/* points stay in the store's order within a tenant */
		for (size_t j = i; j < n; j++) {
			if (done[j] || strcmp(names[j], names[i]))
				continue;
			t->pv[k++] = pts[j];
			done[j] = true;
		}
		tn = tenant_get(t, names[i]);
		err = tn ? otlp_encoder__add(tn->enc, desc, t->pv, k) : -ENOMEM;
	}
out:
	free(names);
	free(done);
	return err;
}

struct emit_ctx {
	otlp_tenant_emit_fn emit;
	void *ctx;
	const char *header;
	struct otlp_tenancy *t;
};

static int emit_one(void *ctx, void *buf, size_t len, size_t npoints)
{
	struct emit_ctx *e = ctx;

	e->t->st.requests++;
	e->t->st.points += npoints;
	return e->emit(e->ctx, buf, len, npoints, e->header);
}

int otlp_tenancy__export(struct otlp_tenancy *t, struct mstore *s,
			 uint64_t now_ns, size_t max_points,
			 otlp_tenant_emit_fn emit, void *ctx)
{
	int err, total = 0;

	err = mstore__collect(s, MT_DELTA, now_ns, split_metric, t);
	t->st.tenants = t->nt;
	for (size_t i = 0; i < t->nt; i++) {
		char hdr[512] = "";
		struct emit_ctx ec = { emit, ctx, NULL, t };
		int n;

		if (t->o.header[0]) {
			snprintf(hdr, sizeof(hdr), "%s: %s", t->o.header,
				 t->tv[i].name);
			ec.header = hdr;
		}
		n = err ? 0
			: otlp_encoder__finish_split(t->tv[i].enc, max_points,
						     emit_one, &ec);
		if (n < 0 && !err)
			err = n;
		total += n > 0 ? n : 0;
		otlp_encoder__free(t->tv[i].enc);
		free(t->tv[i].name);
	}
	t->nt = 0;
	return err < 0 ? err : total;
}

struct otlp_tenancy *otlp_tenancy__new(const struct otlp_tenancy_opts *o)
{
	struct otlp_tenancy *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->o = *o;
	t->o.nresource = o->nresource < MAX_RESOURCE ? o->nresource
						     : MAX_RESOURCE;
	for (size_t i = 0; i < t->o.nresource; i++) {
		t->res[i].key = strdup(o->resource[i].key);
		t->res[i].value = strdup(
			o->resource[i].value ? o->resource[i].value : "");
		if (!t->res[i].key || !t->res[i].value) {
			t->o.nresource = i + 1;
			otlp_tenancy__free(t);
			return NULL;
		}
	}
	t->o.resource = t->res;
	if (!t->o.header)
		t->o.header = "X-Scope-OrgID";
	if (!t->o.attribute)
		t->o.attribute = "milo.project";
	return t;
}

void otlp_tenancy__free(struct otlp_tenancy *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->o.nresource; i++) {
		free((char *)t->res[i].key);
		free((char *)t->res[i].value);
	}
	free(t->tv);
	free(t->pv);
	free(t);
}

void otlp_tenancy__stats(struct otlp_tenancy *t, struct otlp_tenancy_stats *st)
{
	*st = t->st;
}
