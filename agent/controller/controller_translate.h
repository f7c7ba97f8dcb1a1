/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `milometer controller --translate TARGET=NAMESPACE/NAME`: the contract's
 * translation kept in the cluster. After every contract or subject change
 * each target is rendered (policy/translate); the leader server-side applies
 * it (field manager milometer) as
 *   prometheus-rules    ConfigMap NAME, key milometer.rules.yml
 *   prometheusrule      PrometheusRule NAME (monitoring.coreos.com/v1)
 *   otelcol             ConfigMap NAME, key otelcol.yaml
 *   kube-state-metrics  ConfigMap NAME, key custom-resource-state.yaml
 * only when the rendered content differs from the object's (annotation
 * telemetry.miloapis.com/translation-hash), and every MetricPolicy gets the
 * condition Translated: True when every target computes it, else False
 * NotTranslatable, the message naming each target's verdict.
 */
#ifndef MM_AGENT_K8S_CONTROLLER_TRANSLATE_H
#define MM_AGENT_K8S_CONTROLLER_TRANSLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct contract;
struct policy_engine;
struct k8s_http;

#define CTRL_TRANSLATE_MAX 8

struct ctrl_target {
	char target[32];
	char ns[254];
	char name[254];
	char *content; /* last rendered */
	uint64_t hash;
	bool applied; /* the cluster has this content */
};

struct ctrl_translate {
	struct ctrl_target t[CTRL_TRANSLATE_MAX];
	size_t n;
	uint64_t writes, write_errors;
};

/* Parse one TARGET=NAMESPACE/NAME; -EINVAL with the reason in err. */
int ctrl_translate__add(struct ctrl_translate *ct, const char *arg, char *err,
			size_t errlen);
/* Render every target; set each policy's Translated condition. */
void ctrl_translate__render(struct ctrl_translate *ct, struct contract *c,
			    struct policy_engine *e);
/* Leader: write what the cluster does not have yet. */
void ctrl_translate__apply(struct ctrl_translate *ct, struct k8s_http *http);
/* A new leader checks the cluster's objects again. */
void ctrl_translate__forget(struct ctrl_translate *ct);
void ctrl_translate__free(struct ctrl_translate *ct);

#endif /* MM_AGENT_K8S_CONTROLLER_TRANSLATE_H */
