/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Metric store -> OTLP ExportMetricsServiceRequest (protobuf, upstream
 * opentelemetry-proto v1 wire format). One request holds one Resource with
 * one ScopeMetrics ("milometer") and one Metric per store metric that has
 * points.
 *
 * Usage, once per export interval (requests of at most 5000 points each):
 *
 *	n = otlp_encode__store_split(enc, store, now_ns, 5000,
 *				     otlp_sender__emit, sender);
 *
 * Delta metrics are reported as deltas only when the store was made with
 * keep_delta; everything else goes out cumulative, as the store says per
 * metric (desc->temporality in the collect callback).
 *
 * Without a store (tests), call otlp_encoder__add() as mstore__collect
 * would, then otlp_encoder__finish().
 */
#ifndef MM_EXPORTER_OTLP_ENCODE_H
#define MM_EXPORTER_OTLP_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "policy/model/metric_store.h"

struct otlp_encode_opts {
	/*
	 * Resource attributes as the agent knows them (service.version,
	 * host.name, k8s.node.name, k8s.cluster.uid, ...); copied. Entries
	 * with a NULL or empty value are left out. service.name defaults to
	 * "milometer" and service.version to the build version when absent.
	 */
	const struct mlabel *resource;
	size_t nresource;
	const char *scope_name;    /* NULL: "milometer" */
	const char *scope_version; /* NULL: the build version */
};

struct otlp_encoder;

struct otlp_encoder *otlp_encoder__new(const struct otlp_encode_opts *o);
void otlp_encoder__free(struct otlp_encoder *e);

/*
 * An mstore_visit_fn (ctx is the encoder): copies the metric and its points
 * into the encoder, as the views are only valid during the callback.
 */
int otlp_encoder__add(void *ctx, const struct mmetric_desc *desc,
		      const struct mpoint_view *points, size_t npoints);

/*
 * Serialise everything added since the last finish into one request and
 * reset the encoder. *buf is malloc()ed and owned by the caller. Returns the
 * number of data points (0: nothing to send, *buf is NULL) or -errno.
 */
int otlp_encoder__finish(struct otlp_encoder *e, void **buf, size_t *len);

/* mstore__collect(MT_DELTA view) into the encoder, then finish. */
int otlp_encode__store(struct otlp_encoder *e, struct mstore *s,
		       uint64_t now_ns, void **buf, size_t *len);

/*
 * Called once per request; buf (malloc()ed) becomes the callee's, e.g.
 * otlp_sender__enqueue(). A negative return stops the split and is
 * returned by finish_split.
 */
typedef int (*otlp_emit_fn)(void *ctx, void *buf, size_t len, size_t npoints);

/*
 * As finish/store, but in requests of at most max_points data points each
 * (0: no limit), so a large store never makes a request bigger than the
 * export queue or a collector's body limit (the OTel Collector refuses
 * bodies over 20 MiB by default). A metric may span requests. Returns the
 * number of points emitted or -errno; resets the encoder either way.
 */
int otlp_encoder__finish_split(struct otlp_encoder *e, size_t max_points,
			       otlp_emit_fn emit, void *ctx);
int otlp_encode__store_split(struct otlp_encoder *e, struct mstore *s,
			     uint64_t now_ns, size_t max_points,
			     otlp_emit_fn emit, void *ctx);

#endif /* MM_EXPORTER_OTLP_ENCODE_H */
