/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OTLP per tenant, for backends that keep tenants apart by a request
 * header (Mimir, Cortex, Loki: X-Scope-OrgID; Thanos receive: its tenant
 * header): one export's points are collected once and split into one
 * request stream per tenant, each with its own Resource carrying the
 * tenant as an attribute and the tenant in the header. The tenant of a
 * point comes from the object its series is bound to (mstore__bind), never
 * from a label value. Points bound to no object (self-metrics, unmatched
 * traffic, series merged from several objects) go to the default tenant,
 * or are dropped and counted when there is none.
 */
#ifndef MM_EXPORTER_OTLP_TENANCY_H
#define MM_EXPORTER_OTLP_TENANCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/model/metric_store.h"

/* The tenant of a subject into buf; false: none. */
typedef bool (*otlp_tenant_fn)(void *ctx, const char *subject, char *buf,
			       size_t len);
/* One request: buf (malloc'd) becomes the callee's; header "Name: tenant". */
typedef int (*otlp_tenant_emit_fn)(void *ctx, void *buf, size_t len,
				   size_t npoints, const char *header);

struct otlp_tenancy_opts {
	const char *header;         /* NULL: X-Scope-OrgID; "": none */
	const char *attribute;      /* resource attribute; NULL: milo.project */
	const char *default_tenant; /* NULL: drop what has no tenant */
	const struct mlabel *resource; /* the agent's own attributes */
	size_t nresource;
	otlp_tenant_fn tenant;
	void *ctx;
};

struct otlp_tenancy_stats {
	uint64_t requests;
	uint64_t points;
	uint64_t dropped_points; /* no tenant and no default */
	uint64_t tenants;        /* in the last export */
};

struct otlp_tenancy;

struct otlp_tenancy *otlp_tenancy__new(const struct otlp_tenancy_opts *o);
void otlp_tenancy__free(struct otlp_tenancy *t);
/*
 * Collect s (MT_DELTA view) once and emit requests of at most max_points
 * points, each holding one tenant's points only. Returns points emitted or
 * -errno.
 */
int otlp_tenancy__export(struct otlp_tenancy *t, struct mstore *s,
			 uint64_t now_ns, size_t max_points,
			 otlp_tenant_emit_fn emit, void *ctx);
void otlp_tenancy__stats(struct otlp_tenancy *t, struct otlp_tenancy_stats *st);

#endif /* MM_EXPORTER_OTLP_TENANCY_H */
