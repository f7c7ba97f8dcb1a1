/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to policy/translate: options, the per-policy report, targets. */
#ifndef MM_POLICY_TRANSLATE_IMPL_H
#define MM_POLICY_TRANSLATE_IMPL_H

#include <stdbool.h>
#include <stdio.h>

#include "exporter/prom_text.h"
#include "policy/translate/plan.h"
#include "policy/translate/profile.h"
#include "policy/translate/translate.h"

struct contract;
struct policy_engine;

struct tr_opts {
	enum tr_target target;
	const struct tr_profile *profile;
	enum prom_format le_format; /* how the scrape prints a shared `le` */
	bool prometheusrule;        /* wrap as monitoring.coreos.com/v1 */
	const char *object_name;
	const char *object_namespace;
	const char *otel_receiver; /* otelcol: OTLP/HTTP listen endpoint */
	const char *otel_exporter; /* otelcol: OTLP/HTTP destination */
	const char *alerts_config; /* prometheus-alerts: objectives, or NULL */
};

struct tr_report_row {
	char *policy;
	bool ok;
	bool na; /* the target does not compute this kind of policy */
	char *msg;
};

struct tr_report {
	struct tr_report_row *rows;
	size_t n;
};

void report__add(struct tr_report *r, const char *policy, bool ok,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A policy of a kind the target does not compute (not a refusal). */
void report__na(struct tr_report *r, const char *policy, const char *msg);
void report__free(struct tr_report *r);

/* Render one target into out, one report row per policy. */
struct contract;
struct policy_engine;
int translate__render(struct contract *c, struct policy_engine *e,
		      const struct tr_opts *o, const char *const *names,
		      size_t nnames, FILE *out, struct tr_report *rep,
		      char *err, size_t errlen);

/* prom_rules.c */
int tr_prom__rules(FILE *out, struct tr_plan *plans, size_t n,
		   const struct tr_opts *o, struct tr_report *rep);
int tr_prom__label(const char *key, char *out, size_t len);
/* A PromQL string literal's body; the same, escaped as an RE2 literal. */
void tr_prom__put_str(FILE *f, const char *s);
void tr_prom__put_re(FILE *f, const char *s);
/* A rule file's head (or a PrometheusRule's); the groups' indent. */
const char *tr_prom__header(FILE *out, const struct tr_opts *o);

/* relabel.c: metric_relabel_configs for pure relabelling policies */
int tr_relabel__config(FILE *out, struct tr_plan *plans, size_t n,
		       const struct tr_opts *o, struct tr_report *rep);

/* alerts.c: alerting rules over the contract's target metrics */
int tr_alerts__rules(FILE *out, struct contract *c, struct tr_plan *plans,
		     size_t n, const struct tr_opts *o, struct tr_report *rep,
		     char *err, size_t errlen);

/* otelcol.c */
int tr_otel__config(FILE *out, struct tr_plan *plans, size_t n,
		    const struct tr_opts *o, struct tr_report *rep);

/* ksm.c */
int tr_ksm__config(FILE *out, struct tr_plan *plans, size_t n,
		   const struct tr_opts *o, struct tr_report *rep);

#endif /* MM_POLICY_TRANSLATE_IMPL_H */
