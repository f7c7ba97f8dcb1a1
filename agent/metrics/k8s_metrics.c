// SPDX-License-Identifier: Apache-2.0
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "agent/k8s/api_source.h"
#include "agent/k8s/http.h"
#include "agent/metrics/k8s_metrics.h"
#include "agent/k8s/reflector.h"
#include "exporter/metric_doc.h"
#include "policy/model/metric_store.h"

enum {
	K_STATE,
	K_RELISTS,
	K_ERRORS,
	K_SYNC_AGE,
	K_OBJECTS,
	K_EVENTS,
	K_REQUESTS,
	K_BYTES,
	K_REREADS,
	K_UP,
	K_RESTARTS,
	K__N
};

struct k8s_metrics {
	struct mstore *store;
	int id[K__N];
};

#define WITH_API "with the Kubernetes API as the source of routes"

/* one metric a row: clang-format would wrap the rows */
// clang-format off
static const struct metric_doc defs[K__N] = {
	[K_STATE] = { "milometer.k8s.watch.state", "1 on the current state of each watch (listing, watching, backoff, absent, forbidden, unauthorized).", "{state}", MI_GAUGE, true, "resource,state", WITH_API },
	[K_RELISTS] = { "milometer.k8s.relists", "Lists after the first (410 Gone, errors).", "1", MI_COUNTER, true, "resource", WITH_API },
	[K_ERRORS] = { "milometer.k8s.errors", "API errors by code (401, 403, 404, 410, 429, 5xx, 4xx, transport, decode).", "1", MI_COUNTER, true, "resource,code",
		       "after an API error" },
	[K_SYNC_AGE] = { "milometer.k8s.last_sync.age", "Seconds since the watch last delivered a list, event or bookmark.", "s", MI_GAUGE, false, "resource", WITH_API,
			 "-1 before the first." },
	[K_OBJECTS] = { "milometer.k8s.objects", "Objects held per watched resource.", "{object}", MI_GAUGE, true, "resource", WITH_API },
	[K_EVENTS] = { "milometer.k8s.events", "Watch events applied.", "1", MI_COUNTER, true, "resource", WITH_API },
	[K_REQUESTS] = { "milometer.k8s.requests", "Requests sent to the API server.", "1", MI_COUNTER, true, NULL, WITH_API },
	[K_BYTES] = { "milometer.k8s.received", "Bytes received from the API server.", "By", MI_COUNTER, true, NULL, WITH_API },
	[K_REREADS] = { "milometer.k8s.token.rereads", "Token file re-read after a 401 (rotated token).", "1", MI_COUNTER, true, NULL, WITH_API },
	[K_UP] = { "milometer.k8s.watch.up", "1 while the watch of a resource is open (the API server answered it), 0 while it is down.", "", MI_GAUGE, true, "resource", WITH_API },
	[K_RESTARTS] = { "milometer.k8s.watch.restarts", "Watches opened again after they failed and backed off (API server away, connection lost).", "1", MI_COUNTER, true, "resource", WITH_API },
};
// clang-format on

int k8s_metrics__write_reference(FILE *out)
{
	return metric_doc__write_section(
		out, "Kubernetes API client",
		"Per watched resource (`resource`: plural.group), what the agent's "
		"API client did and what it cost the API server.",
		defs, K__N);
}

struct k8s_metrics *k8s_metrics__new(struct mstore *store)
{
	struct k8s_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->store = store;
	for (int i = 0; i < K__N; i++) {
		struct mmetric_desc d = metric_doc__desc(&defs[i]);

		m->id[i] = mstore__add_metric(store, &d);
		if (m->id[i] < 0) {
			free(m);
			return NULL;
		}
	}
	return m;
}

void k8s_metrics__free(struct k8s_metrics *m)
{
	free(m);
}

static void set(struct k8s_metrics *m, int k, double v, uint64_t now,
		const struct mlabel *l, size_t n)
{
	struct mseries *s = mstore__series(m->store, m->id[k], l, n);

	if (s)
		mseries__set(s, v, now);
}

void k8s_metrics__refresh(struct k8s_metrics *m, struct k8s_api *api,
			  uint64_t now_ns)
{
	struct k8s_http_stats *hs = k8s_api__http_stats(api);
	struct timespec ts;
	uint64_t mono;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	mono = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	set(m, K_REQUESTS, hs->requests, now_ns, NULL, 0);
	set(m, K_BYTES, hs->bytes_in, now_ns, NULL, 0);
	set(m, K_REREADS, hs->token_rereads_401, now_ns, NULL, 0);
	for (size_t i = 0; i < k8s_api__nreflectors(api); i++) {
		struct k8s_reflector *r = k8s_api__reflector(api, i);
		const struct k8s_resource *res = k8s_reflector__resource(r);
		struct k8s_reflector_stats *st = k8s_reflector__stats(r);
		char name[256];
		struct mlabel l[3] = { { "resource", name } };

		/* the two ClusterProperty watches differ by their selector,
		 * the two Service watches by their label */
		snprintf(name, sizeof(name), "%s%s%s%s%s%s%s", res->plural,
			 res->group[0] ? "." : "", res->group,
			 res->field_selector && res->field_selector[0] == 'm'
				 ? ":"
				 : "",
			 res->field_selector && res->field_selector[0] == 'm'
				 ? res->field_selector + 14
				 : "",
			 res->label_selector ? ":" : "",
			 res->label_selector ? res->label_selector : "");
		for (int s = K8S_W_LISTING; s < K8S_W__N; s++) {
			l[1] = (struct mlabel){ "state",
						k8s_watch_state__name(s) };
			set(m, K_STATE, st->state == s, now_ns, l, 2);
		}
		set(m, K_RELISTS, st->relists, now_ns, l, 1);
		set(m, K_UP, st->watch_up, now_ns, l, 1);
		set(m, K_RESTARTS, st->watch_restarts, now_ns, l, 1);
		set(m, K_OBJECTS, st->objects, now_ns, l, 1);
		set(m, K_EVENTS, st->events, now_ns, l, 1);
		set(m, K_SYNC_AGE,
		    st->last_sync_ns ? (mono - st->last_sync_ns) / 1e9 : -1,
		    now_ns, l, 1);
		for (int e = 0; e < K8S_E__N; e++) {
			if (!st->errors[e])
				continue;
			l[1] = (struct mlabel){ "code", k8s_err__name(e) };
			set(m, K_ERRORS, st->errors[e], now_ns, l, 2);
		}
	}
}
