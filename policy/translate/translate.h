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

struct tr_profile;

/* What `milometer translate` was asked (agent/cmd/translate.c's flags). */
struct translate_cmd {
	const char *const *paths; /* --manifests: files or directories */
	size_t npaths;
	const char *kubeconfig; /* instead of paths: that cluster's objects */
	enum tr_target target;
	const char *target_name;          /* as the report names it */
	const struct tr_profile *profile; /* NULL: milometer */
	bool prometheusrule;              /* wrap as monitoring.coreos.com/v1 */
	bool le_text;              /* the scrape prints `le` as text ("1") */
	const char *alerts_config; /* prometheus-alerts: objectives, or NULL */
	const char *const *policies; /* only these (npolicies 0: all) */
	size_t npolicies;
	const char *object_name; /* NULL: milometer-translated */
	const char *object_namespace;
	const char *otel_receiver; /* NULL: 0.0.0.0:4318 */
	const char *otel_exporter; /* NULL: http://otlp-backend:4318 */
	const char *output;        /* NULL: out */
	bool strict;               /* a policy not translatable: exit 3 */
	bool json;                 /* the report as JSON */
};

/*
 * The enum tr_target a --target name means, -EINVAL for none (the names
 * `milometer translate --help` lists).
 */
int translate__target_kind(const char *name);
/*
 * Translate what cmd says: the result on out (or cmd->output), the report
 * and errors on errf. api NULL: --manifests only. Returns the exit status:
 * 0 done, 2 unreadable manifests or output, 3 cmd->strict and a policy not
 * translatable.
 */
int translate__run(const struct translate_cmd *cmd, FILE *out, FILE *errf,
		   const struct translate_api *api);

#endif /* MM_POLICY_TRANSLATE_H */
