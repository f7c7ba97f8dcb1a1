/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OTel -> Prometheus names, per the OTel specification "Prometheus and
 * OpenMetrics Compatibility" (OTLP Metric points to Prometheus):
 *  - metric names: characters outside [a-zA-Z0-9_:] become '_', runs of '_'
 *    collapse to one, a leading digit gets a '_' prefix;
 *  - the unit, converted to words (s -> seconds, ms -> milliseconds,
 *    By -> bytes, foo/s -> foo_per_second, {annotations} dropped), is
 *    appended unless the name already contains it as a '_'-separated part
 *    or it is a scaled base unit (ms, min, KiBy...: see
 *    prom_names__unit_is_scaled(); Prometheus names carry base units only);
 *  - unit "1" gives "_ratio" on gauges only (what the Collector's translator
 *    does; sums and histograms get no suffix for "1");
 *  - monotonic counters end in "_total" (moved to the end if present
 *    elsewhere as the last token before the unit);
 *  - label names: as metric names but without ':'.
 */
#ifndef MM_EXPORTER_PROM_NAMES_H
#define MM_EXPORTER_PROM_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "policy/model/metric_store.h"

/*
 * The Prometheus unit word for an OTel unit and instrument ("" when none).
 * Returns the length written or -ENOSPC.
 */
int prom_names__unit(const char *unit, enum minstrument inst, char *out,
		     size_t len);
/*
 * The metric name as the text format 0.0.4 exposes it: counters include the
 * "_total" suffix. Returns the length written or -ENOSPC.
 */
int prom_names__metric(const struct mmetric_desc *desc, char *out, size_t len);
/*
 * Is this unit word (from prom_names__unit) a scaled base unit
 * (milliseconds, minutes, kibibytes, ...)? Such units are not appended to
 * metric names (deviation from the OTel translation, as Envoy's own
 * exposition does: Prometheus names only carry base units).
 */
bool prom_names__unit_is_scaled(const char *word);
/* The "# TYPE" word of an instrument: counter, histogram or gauge. */
const char *prom_names__type(enum minstrument inst);
/* A label name; "" stays "". Returns the length written or -ENOSPC. */
int prom_names__label(const char *key, char *out, size_t len);

/*
 * Write s escaped for a label value (\\, \", \n) or, with quotes false, for
 * text-format HELP (\\, \n). Invalid UTF-8 becomes U+FFFD, since Prometheus
 * rejects a scrape that contains it.
 */
void prom_names__write_escaped(FILE *f, const char *s, bool quotes);

#endif /* MM_EXPORTER_PROM_NAMES_H */
