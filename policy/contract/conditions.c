// SPDX-License-Identifier: Apache-2.0
/* Status conditions of contract objects: see conditions.h. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "policy/contract/conditions.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct condition *find(struct cond_set *cs, const char *type)
{
	for (size_t i = 0; i < cs->n; i++)
		if (!strcmp(cs->c[i].type, type))
			return &cs->c[i];
	return NULL;
}

void conditions__set(struct cond_set *cs, const char *type,
		     enum cond_status status, const char *reason,
		     const char *fmt, ...)
{
	struct condition *c = find(cs, type);
	va_list ap;

	if (!c) {
		if (cs->n >= COND_MAX)
			return;
		c = &cs->c[cs->n++];
		memset(c, 0, sizeof(*c));
		snprintf(c->type, sizeof(c->type), "%s", type);
		c->status = COND_UNKNOWN;
	}
	if (c->status != status || !c->last_transition_ns)
		c->last_transition_ns = now_ns();
	c->status = status;
	snprintf(c->reason, sizeof(c->reason), "%s", reason);
	va_start(ap, fmt);
	vsnprintf(c->message, sizeof(c->message), fmt, ap);
	va_end(ap);
}

const struct condition *conditions__get(const struct cond_set *cs,
					const char *type)
{
	return find((struct cond_set *)cs, type);
}

bool conditions__is_true(const struct cond_set *cs, const char *type)
{
	const struct condition *c = conditions__get(cs, type);

	return c && c->status == COND_TRUE;
}

const char *conditions__status_str(enum cond_status s)
{
	switch (s) {
	case COND_TRUE:
		return "True";
	case COND_FALSE:
		return "False";
	default:
		return "Unknown";
	}
}

void conditions__carry_over(struct cond_set *now, const struct cond_set *old)
{
	for (size_t i = 0; i < now->n; i++) {
		const struct condition *o =
			conditions__get(old, now->c[i].type);

		if (o && o->status == now->c[i].status)
			now->c[i].last_transition_ns = o->last_transition_ns;
	}
}
