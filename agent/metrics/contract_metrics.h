/* SPDX-License-Identifier: Apache-2.0 */
/*
 * milometer.contract.objects: the contract's objects by condition, one
 * gauge series per (kind, type, status, reason), as kube-state-metrics
 * exposes status conditions. A MetricPolicy rejected alone (an invalid
 * CEL path, an unknown attribute...) is its Accepted False series with
 * the reason. The agent and the controller expose the same family.
 */
#ifndef MM_AGENT_METRICS_CONTRACT_METRICS_H
#define MM_AGENT_METRICS_CONTRACT_METRICS_H

#include <stdint.h>

#include "exporter/metric_doc.h"

struct contract;
struct mstore;

#define CONTRACT_METRICS_OBJECTS_DOC                                                                  \
	{                                                                                             \
		"milometer.contract.objects",                                                         \
			"MetricDefinitions and MetricPolicies by condition.",                         \
			"{object}", MI_GAUGE, true, "kind,type,status,reason",                        \
			"when MetricDefinitions or MetricPolicies are loaded (agent and controller)", \
			"Objects rejected alone (the others stay in effect) are the "                 \
			"`type=\"Accepted\",status=\"False\"` series, by `reason`."                   \
	}

/* Set the series of metric id; the caller holds the store lock. */
void contract_metrics__set(struct contract *c, struct mstore *s, int id,
			   uint64_t now_ns);

#endif /* MM_AGENT_METRICS_CONTRACT_METRICS_H */
