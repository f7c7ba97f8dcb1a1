// SPDX-License-Identifier: Apache-2.0
/*
 * Builds the protoc-c message tree for ExportMetricsServiceRequests and
 * packs them. Every node of the tree comes from one bump arena that finish()
 * rewinds, so a 10k-series request costs a handful of mallocs and cannot
 * leak per point.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/otlp_encode.h"
#include "exporter/otlp_metric.h"

#ifndef MM_VERSION
#define MM_VERSION "0.0.0-dev"
#endif

struct otlp_encoder {
	struct otlp_arena arena;
	/* Resource and scope live outside the arena: they outlast finish(). */
	otlp_pb_kv **res_attrs;
	otlp_pb_kv *res_kv;
	otlp_pb_any *res_any;
	size_t nres;
	char *scope_name, *scope_version;
	otlp_pb_metric **metrics;
	size_t nmetrics, cap_metrics;
	size_t npoints;
};

int otlp_encoder__add(void *ctx, const struct mmetric_desc *desc,
		      const struct mpoint_view *points, size_t npoints)
{
	struct otlp_encoder *e = ctx;
	struct otlp_arena *a = &e->arena;
	otlp_pb_metric *m;
	int err;

	if (!npoints)
		return 0;
	if (e->nmetrics == e->cap_metrics) {
		size_t cap = e->cap_metrics ? e->cap_metrics * 2 : 64;
		otlp_pb_metric **v;

		v = realloc(e->metrics, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		e->metrics = v;
		e->cap_metrics = cap;
	}
	m = OTLP_ANEW(a, otlp_pb_metric, OTLP_PBC(METRIC__INIT));
	if (!m)
		return -ENOMEM;
	m->name = otlp_arena__strdup(a, desc->name);
	m->description = otlp_arena__strdup(a, desc->description);
	m->unit = otlp_arena__strdup(a, desc->unit);
	if (!m->name || !m->description || !m->unit)
		return -ENOMEM;
	err = otlp_metric__fill(a, m, desc, points, npoints);
	if (err)
		return err;
	e->metrics[e->nmetrics++] = m;
	e->npoints += npoints;
	return 0;
}

static void encoder_reset(struct otlp_encoder *e)
{
	otlp_arena__rewind(&e->arena);
	e->nmetrics = 0;
	e->npoints = 0;
}

static int pack_request(struct otlp_encoder *e, otlp_pb_metric **metrics,
			size_t nmetrics, void **buf, size_t *len)
{
	otlp_pb_request req = OTLP_PBC(EXPORT_METRICS_SERVICE_REQUEST__INIT);
	otlp_pb_resource_metrics rm = OTLP_PBC(RESOURCE_METRICS__INIT);
	otlp_pb_resource res = OTLP_PBC(RESOURCE__INIT);
	otlp_pb_scope_metrics sm = OTLP_PBC(SCOPE_METRICS__INIT);
	otlp_pb_scope scope = OTLP_PBC(INSTRUMENTATION_SCOPE__INIT);
	otlp_pb_resource_metrics *rmp = &rm;
	otlp_pb_scope_metrics *smp = &sm;
	size_t size;

	res.n_attributes = e->nres;
	res.attributes = e->res_attrs;
	scope.name = e->scope_name;
	scope.version = e->scope_version;
	sm.scope = &scope;
	sm.n_metrics = nmetrics;
	sm.metrics = metrics;
	rm.resource = &res;
	rm.n_scope_metrics = 1;
	rm.scope_metrics = &smp;
	req.n_resource_metrics = 1;
	req.resource_metrics = &rmp;

	size = protobuf_c_message_get_packed_size(&req.base);
	*buf = malloc(size ? size : 1);
	if (!*buf)
		return -ENOMEM;
	*len = protobuf_c_message_pack(&req.base, *buf);
	return 0;
}

int otlp_encoder__finish_split(struct otlp_encoder *e, size_t max_points,
			       otlp_emit_fn emit, void *ctx)
{
	otlp_pb_metric **batch = NULL;
	size_t i = 0, off = 0, total = 0;
	int ret = 0;

	if (!max_points)
		max_points = SIZE_MAX;
	if (e->nmetrics) {
		batch = otlp_arena__alloc(&e->arena,
					  e->nmetrics * sizeof(*batch));
		if (!batch) {
			ret = -ENOMEM;
			goto cleanup;
		}
	}
	while (i < e->nmetrics) {
		size_t nb = 0, taken = 0, n;
		void *buf;
		size_t len;

		while (i < e->nmetrics && taken < max_points) {
			size_t left = otlp_metric__npoints(e->metrics[i]) - off;

			n = left < max_points - taken ? left
						      : max_points - taken;
			batch[nb] = otlp_metric__slice(&e->arena, e->metrics[i],
						       off, n);
			if (!batch[nb]) {
				ret = -ENOMEM;
				goto cleanup;
			}
			nb++;
			taken += n;
			off += n;
			if (off == otlp_metric__npoints(e->metrics[i])) {
				i++;
				off = 0;
			}
		}
		ret = pack_request(e, batch, nb, &buf, &len);
		if (ret)
			goto cleanup;
		ret = emit(ctx, buf, len, taken);
		if (ret < 0)
			goto cleanup;
		total += taken;
	}
	ret = total > INT32_MAX ? INT32_MAX : (int)total;
cleanup:
	encoder_reset(e);
	return ret;
}

struct one_buf {
	void *buf;
	size_t len;
};

static int keep_one(void *ctx, void *buf, size_t len, size_t npoints)
{
	struct one_buf *ob = ctx;

	ob->buf = buf;
	ob->len = len;
	return 0;
}

int otlp_encoder__finish(struct otlp_encoder *e, void **buf, size_t *len)
{
	struct one_buf ob = {};
	int ret;

	ret = otlp_encoder__finish_split(e, SIZE_MAX, keep_one, &ob);
	*buf = ret > 0 ? ob.buf : NULL;
	*len = ret > 0 ? ob.len : 0;
	if (ret <= 0)
		free(ob.buf);
	return ret;
}

int otlp_encode__store(struct otlp_encoder *e, struct mstore *s,
		       uint64_t now_ns, void **buf, size_t *len)
{
	int err;

	err = mstore__collect(s, MT_DELTA, now_ns, otlp_encoder__add, e);
	if (err < 0) {
		encoder_reset(e);
		*buf = NULL;
		*len = 0;
		return err;
	}
	return otlp_encoder__finish(e, buf, len);
}

int otlp_encode__store_split(struct otlp_encoder *e, struct mstore *s,
			     uint64_t now_ns, size_t max_points,
			     otlp_emit_fn emit, void *ctx)
{
	int err;

	err = mstore__collect(s, MT_DELTA, now_ns, otlp_encoder__add, e);
	if (err < 0) {
		encoder_reset(e);
		return err;
	}
	return otlp_encoder__finish_split(e, max_points, emit, ctx);
}

static bool has_key(const struct mlabel *l, size_t n, const char *key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (l[i].key && !strcmp(l[i].key, key) && l[i].value &&
		    *l[i].value)
			return true;
	return false;
}

static char *xstrdup(const char *s)
{
	return strdup(s ? s : "");
}

/* Resource KeyValues are malloc()ed singly: they live as long as the
 * encoder and there are only a handful. */
static int build_resource(struct otlp_encoder *e,
			  const struct otlp_encode_opts *o)
{
	struct mlabel defaults[2];
	size_t ndef = 0, n, i, k = 0;

	if (!has_key(o->resource, o->nresource, "service.name"))
		defaults[ndef++] =
			(struct mlabel){ "service.name", "milometer" };
	if (!has_key(o->resource, o->nresource, "service.version"))
		defaults[ndef++] =
			(struct mlabel){ "service.version", e->scope_version };
	n = ndef + o->nresource;
	e->res_attrs = calloc(n, sizeof(*e->res_attrs));
	e->res_kv = calloc(n, sizeof(*e->res_kv));
	e->res_any = calloc(n, sizeof(*e->res_any));
	if (!e->res_attrs || !e->res_kv || !e->res_any)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct mlabel *l = i < ndef ? &defaults[i]
						  : &o->resource[i - ndef];
		otlp_pb_kv *kv = &e->res_kv[k];
		otlp_pb_any *any = &e->res_any[k];

		if (!l->key || !*l->key || !l->value || !*l->value)
			continue;
		*kv = (otlp_pb_kv)OTLP_PBC(KEY_VALUE__INIT);
		*any = (otlp_pb_any)OTLP_PBC(ANY_VALUE__INIT);
		any->value_case = OTLP_PBC(ANY_VALUE__VALUE_STRING_VALUE);
		any->string_value = strdup(l->value);
		kv->key = strdup(l->key);
		kv->value = any;
		e->res_attrs[k++] = kv;
		e->nres = k; /* otlp_encoder__free() frees what is set */
		if (!kv->key || !any->string_value)
			return -ENOMEM;
	}
	return 0;
}

struct otlp_encoder *otlp_encoder__new(const struct otlp_encode_opts *o)
{
	struct otlp_encode_opts none = {};
	struct otlp_encoder *e;

	if (!o)
		o = &none;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->scope_name = xstrdup(o->scope_name ? o->scope_name : "milometer");
	e->scope_version =
		xstrdup(o->scope_version ? o->scope_version : MM_VERSION);
	if (!e->scope_name || !e->scope_version || build_resource(e, o) < 0) {
		otlp_encoder__free(e);
		return NULL;
	}
	return e;
}

void otlp_encoder__free(struct otlp_encoder *e)
{
	size_t i;

	if (!e)
		return;
	for (i = 0; i < e->nres; i++) {
		free(e->res_kv[i].key);
		free(e->res_any[i].string_value);
	}
	free(e->res_attrs);
	free(e->res_kv);
	free(e->res_any);
	free(e->scope_name);
	free(e->scope_version);
	free(e->metrics);
	otlp_arena__free(&e->arena);
	free(e);
}
