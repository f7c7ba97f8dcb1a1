/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prometheus exposition of the metric store's cumulative view, in the text
 * format 0.0.4 or OpenMetrics 1.0.0.
 *
 * Mapping: monotonic sums -> counter (samples NAME_total), non-monotonic sums
 * and gauges -> gauge, histograms -> histogram (_bucket with cumulative
 * counts up to le="+Inf", _sum, _count). Exponential histograms are written
 * as classic histograms whose le values are the exponential bucket
 * boundaries: negative buckets (le = -base^i), then le="0" for the zero
 * bucket when anything is at or below zero, then positive buckets
 * (le = base^(i+1)); lossless except that a negative value exactly on a
 * boundary is counted one bucket up. Numbers are formatted as Go's
 * strconv.FormatFloat(v, 'g', -1, 64) (as client_golang does); OpenMetrics
 * adds ".0" to integral floats as client_golang's OpenMetrics encoder does.
 */
#ifndef MM_EXPORTER_PROM_TEXT_H
#define MM_EXPORTER_PROM_TEXT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "policy/model/metric_store.h"

enum prom_format {
	PROM_FMT_TEXT,        /* text/plain; version=0.0.4 */
	PROM_FMT_OPENMETRICS, /* application/openmetrics-text; version=1.0.0 */
};

/* OpenMetrics when the Accept header asks for it (q > 0), else text. */
enum prom_format prom_text__negotiate(const char *accept);
const char *prom_text__content_type(enum prom_format fmt);

/* Shortest round-trip formatting of v into buf (>= 32 bytes). */
void prom_text__format_double(char *buf, size_t len, double v,
			      enum prom_format fmt);

/*
 * Write every metric of the store (MT_CUMULATIVE view at now_ns). A metric
 * whose Prometheus name collides with an earlier one is skipped (the scrape
 * would be rejected otherwise). Returns 0 or negative errno.
 */
int prom_text__write(FILE *out, struct mstore *s, enum prom_format fmt,
		     uint64_t now_ns);
/*
 * As prom_text__write, adding constant labels to every series that does not
 * carry the key itself (the cluster identity: a per-series label is what
 * multi-cluster PromQL selects on, target_info needs a join).
 */
int prom_text__write_labelled(FILE *out, struct mstore *s, enum prom_format fmt,
			      uint64_t now_ns, const struct mlabel *consts,
			      size_t nconsts);

/*
 * As prom_text__write_labelled, writing only the points keep() accepts by
 * the subject their series is bound to (NULL: bound to nothing single); a
 * family with no point kept is left out whole. *kept (may be NULL) gets
 * how many points were written.
 */
typedef bool (*prom_keep_fn)(void *ctx, const char *subject);
int prom_text__write_filtered(FILE *out, struct mstore *s, enum prom_format fmt,
			      uint64_t now_ns, const struct mlabel *consts,
			      size_t nconsts, prom_keep_fn keep, void *keep_ctx,
			      size_t *kept);

/*
 * The OTel resource as the target_info family (spec: "Resource Attributes"):
 * one sample of value 1 carrying the attributes as labels; gauge in text
 * 0.0.4, info family "target" in OpenMetrics. Write it before prom_text__write(), which
 * ends OpenMetrics output with "# EOF". Nothing is written for n == 0.
 */
int prom_text__write_target_info(FILE *out, const struct mlabel *attrs,
				 size_t n, enum prom_format fmt);

#endif /* MM_EXPORTER_PROM_TEXT_H */
