/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A metric as its producer declares it once: what the store is given
 * (name, help, unit, instrument) and what a reader of the reference needs
 * besides (the labels its series carry, when it is exposed). Producers keep
 * a table of these; `milometer metrics-reference` renders every table as
 * Markdown, with the names Prometheus sees, so the reference cannot drift
 * from what the binary registers.
 */
#ifndef MM_EXPORTER_METRIC_DOC_H
#define MM_EXPORTER_METRIC_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "policy/model/metric_store.h"

struct metric_doc {
	const char *name; /* OTel name, e.g. milometer.series.active */
	const char *help; /* the description the store exposes as HELP */
	const char *unit;
	enum minstrument instrument;
	bool is_int;
	/* label keys (OTel spelling), comma-separated; NULL: none */
	const char *labels;
	const char *when; /* when the agent exposes it; NULL: always */
	const char *note; /* more for the reference than HELP says; NULL: none */
};

/* The store's descriptor for a doc (cumulative, as every producer here). */
struct mmetric_desc metric_doc__desc(const struct metric_doc *d);

/*
 * One Markdown table: a "## title" heading, intro (may be NULL), then a row
 * per doc with the Prometheus name, type, unit, labels and meaning.
 * Returns 0 or -errno.
 */
int metric_doc__write_section(FILE *out, const char *title, const char *intro,
			      const struct metric_doc *docs, size_t n);

#endif /* MM_EXPORTER_METRIC_DOC_H */
