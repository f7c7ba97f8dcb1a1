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

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum tr_target {
	TR_PROM_RULES,
	TR_KSM,
	TR_OTELCOL,
	TR_PROM_ALERTS,
	TR_PROM_RELABEL,
};

struct contract;
struct policy_engine;

/* Called once per policy with the target's verdict. */
typedef void (*translate_report_fn)(void *ctx, const char *policy, bool ok,
				    const char *msg);
/*
 * Render one target from a contract and an engine synced on it (what
 * `milometer controller --translate` keeps in the cluster). target:
 * prometheus-rules, prometheusrule (named name/ns), otelcol or
 * kube-state-metrics, with the default source profile. *buf is malloc()ed.
 * 0, -EINVAL for an unknown target, -ENOMEM.
 */
int translate__target(struct contract *c, struct policy_engine *e,
		      const char *target, const char *name, const char *ns,
		      char **buf, size_t *len, translate_report_fn fn,
		      void *ctx);
/* Whether translate__target() knows the target. */
bool translate__known_target(const char *target);

/*
 * Where --kubeconfig FILE reads the objects from: the API client lives
 * above policy/ (agent/k8s), so the command's front passes it in.
 */
struct manifest_source;
struct translate_api {
	struct manifest_source *(*open)(const char *kubeconfig, void **handle,
					char *err, size_t errlen);
	void (*close)(void *handle);
};

/* The command on stdout/stderr; api NULL: --manifests only. */
int translate__main(int argc, char **argv, const struct translate_api *api);
/* Same, writing to out/err instead of stdout/stderr (tests). */
int translate__run(int argc, char **argv, FILE *out, FILE *err,
		   const struct translate_api *api);

#endif /* MM_POLICY_TRANSLATE_H */
