/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Status conditions in the Kubernetes metav1.Condition shape (type, status,
 * reason, message, lastTransitionTime) for the contract objects. The agent
 * reads manifests and cannot write .status, so conditions live here and are
 * shown by `milometer check`, `milometer ctl policies` and self-metrics.
 */
#ifndef MM_POLICY_CONDITIONS_H
#define MM_POLICY_CONDITIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cond_status {
	COND_UNKNOWN,
	COND_TRUE,
	COND_FALSE,
};

/* Condition types. */
#define COND_ACCEPTED      "Accepted"
#define COND_RESOLVED_REFS "ResolvedRefs"
#define COND_PROGRAMMED    "Programmed"
/* Gateway API: an HTTPRoute some of whose rules were dropped (True only) */
#define COND_PARTIALLY_INVALID "PartiallyInvalid"
/* set by milometer controller --translate: each target's verdict */
#define COND_TRANSLATED "Translated"

#define COND_MAX     5
#define COND_MSG_MAX 512

struct condition {
	char type[24];
	enum cond_status status;
	char reason[40];
	char message[COND_MSG_MAX];
	uint64_t last_transition_ns; /* CLOCK_REALTIME */
};

struct cond_set {
	struct condition c[COND_MAX];
	size_t n;
};

/*
 * Set (or add) the condition of this type. last_transition_ns only moves
 * when the status changes, as metav1.Condition wants.
 */
void conditions__set(struct cond_set *cs, const char *type,
		     enum cond_status status, const char *reason,
		     const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
const struct condition *conditions__get(const struct cond_set *cs,
					const char *type);
/* True when the condition exists and is True. */
bool conditions__is_true(const struct cond_set *cs, const char *type);
/* "True", "False", "Unknown" */
const char *conditions__status_str(enum cond_status s);
/* Copy transition times of unchanged conditions from an older set. */
void conditions__carry_over(struct cond_set *now, const struct cond_set *old);

#endif /* MM_POLICY_CONDITIONS_H */
