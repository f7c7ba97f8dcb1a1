/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MetricDefinition (telemetry.miloapis.com/v1alpha1): what one metric is.
 *
 * Rules this reader enforces (each failure is Accepted=False with the
 * reason in brackets):
 * - spec.metric.name [InvalidName]: at most 255 characters, made of
 *   "<spec.resource.group>.<singular>.<metric>[.<subparts>...]" where the
 *   group is copied verbatim (DNS subdomain: [a-z0-9-] labels, dots), the
 *   singular is the lowercased kind ("httproute"; a plural "httproutes"
 *   resource also matches), and there is at least one metric segment after
 *   it; metric segments match [a-z][a-z0-9_]*. A core-group ("") resource
 *   starts at the singular.
 * - spec.metric.instrument.type [UnknownInstrument]: Counter,
 *   UpDownCounter, Gauge or Histogram, any letter case.
 * - spec.metric.instrument.unit [InvalidUnit]: "1"; spelled out seconds,
 *   milliseconds, microseconds, nanoseconds, minutes, hours, bytes,
 *   kilobytes, megabytes, gigabytes, bits, percent; or UCUM s, ms, us, ns,
 *   min, h, By, KiBy, MiBy, GiBy, kBy, MBy, GBy, bit, %; or a UCUM
 *   annotation alone ("{request}"); any of these "/" a time unit
 *   ("By/s", "bytes/second"). Anything else is rejected.
 * - spec.metric.instrument.aggregationTemporality: cumulative | delta, any
 *   case, optional (default cumulative; ignored for gauges).
 * - spec.labels[].key [InvalidLabel]: [a-z][a-z0-9_]* segments joined by
 *   dots, at most 128 characters, unique, and not encoding a unit (no
 *   "_seconds", "_ms", "_bytes"... suffix: units belong to the metric).
 * - unknown fields anywhere [UnknownField], wrong types [InvalidField].
 */
#ifndef MM_POLICY_CRD_DEFINITION_H
#define MM_POLICY_CRD_DEFINITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/model/metric_store.h"
#include "policy/contract/crd_fields.h"

struct mobject;

struct mdef_label {
	char *key;
	char *description;
	bool required;
};

struct metric_def {
	int refs;
	char *obj_name;
	char *file;
	uint32_t line;
	char *created;   /* metadata.creationTimestamp as written, or NULL */
	char *res_group; /* spec.resource.group ("" for core) */
	char *res_kind;  /* spec.resource.kind or .resource as written */
	char *name;
	char *description;
	char *unit;      /* as written */
	char *stability; /* Alpha | Beta | Stable | Deprecated, or NULL */
	enum minstrument instrument;
	enum mtemporality temporality;
	bool temporality_set;
	struct mdef_label *labels;
	size_t nlabels;
};

/* Parse and validate. 0 and *out (refs = 1), or -EINVAL with e filled. */
int crd_definition__parse(const struct mobject *o, struct metric_def **out,
			  struct crd_err *e);
struct metric_def *crd_definition__get(struct metric_def *d);
void crd_definition__put(struct metric_def *d);

const struct mdef_label *crd_definition__label(const struct metric_def *d,
					       const char *key);
/*
 * Stability: a new version of an accepted definition may not change the
 * metric name, unit, instrument or temporality, nor drop a label (adding
 * labels and editing descriptions is fine). Returns true and writes what
 * changed into msg when next breaks consumers of prev.
 */
bool crd_definition__breaks(const struct metric_def *prev,
			    const struct metric_def *next, char *msg,
			    size_t len);

/* The UCUM code of a unit as written ("seconds" -> "s"); same if unknown. */
const char *crd_definition__ucum(const char *unit);
/* Validators, exposed for tests and for the CRD schema's documentation. */
bool crd_definition__valid_unit(const char *unit);
bool crd_definition__label_has_unit(const char *key);
const char *crd_definition__instrument_name(enum minstrument i);

#endif /* MM_POLICY_CRD_DEFINITION_H */
