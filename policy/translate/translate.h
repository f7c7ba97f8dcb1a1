/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `milometer translate`: the metric contract compiled into the configuration
 * of another stack, so a team keeps the collectors it runs:
 *
 *   prometheus-rules    recording rules computing each DataPlane policy's
 *                       target series from scraped source series
 *                       (--format prometheusrule: a PrometheusRule object)
 *   otelcol             an OpenTelemetry Collector configuration (filter and
 *                       transform processors) computing the DataPlane
 *                       policies' targets from the agent's OTLP sources
 *   kube-state-metrics  a CustomResourceState configuration computing the
 *                       ResourceFields policies' series
 *
 * A policy a target cannot compute exactly is reported NotTranslatable with
 * the reason, and left out; --strict makes that exit 3. docs/translate.md
 * says which CEL each target can express.
 */
#ifndef MM_POLICY_TRANSLATE_H
#define MM_POLICY_TRANSLATE_H

#include <stdio.h>

enum tr_target {
	TR_PROM_RULES,
	TR_KSM,
	TR_OTELCOL,
};

int translate__main(int argc, char **argv);
/* Same, writing to out/err instead of stdout/stderr (tests). */
int translate__run(int argc, char **argv, FILE *out, FILE *err);

#endif /* MM_POLICY_TRANSLATE_H */
