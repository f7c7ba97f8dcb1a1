/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One store metric and its points as an OTLP Metric: Counter -> monotonic
 * Sum, UpDownCounter -> non-monotonic Sum, Gauge -> Gauge, explicit
 * histogram -> Histogram, exponential -> ExponentialHistogram; temporality
 * and int/double points as the descriptor says.
 */
#ifndef MM_EXPORTER_OTLP_METRIC_H
#define MM_EXPORTER_OTLP_METRIC_H

#include "policy/model/metric_store.h"
#include "exporter/otlp_arena.h"
#include "exporter/otlp_pb.h"

/*
 * Fill m's data (m's name/description/unit are the caller's) from npoints
 * (> 0) points, copying everything into a: the store's views only live
 * during its collect callback. Returns 0, -ENOMEM or -EINVAL.
 */
int otlp_metric__fill(struct otlp_arena *a, otlp_pb_metric *m,
		      const struct mmetric_desc *d,
		      const struct mpoint_view *pts, size_t npoints);

size_t otlp_metric__npoints(const otlp_pb_metric *m);

/*
 * m with only points [off, off + n), sharing m's points and strings: a
 * metric too big for one request goes out in several, each with the full
 * descriptor. m itself when that is all of it; NULL on ENOMEM.
 */
otlp_pb_metric *otlp_metric__slice(struct otlp_arena *a,
				   const otlp_pb_metric *m, size_t off,
				   size_t n);

#endif /* MM_EXPORTER_OTLP_METRIC_H */
