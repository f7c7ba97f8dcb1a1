/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A reflector keeps a store equal to one resource in the API server, with
 * the semantics of client-go's tools/cache/reflector.go:
 *   - list with resourceVersion=0 (served from the watch cache), in pages
 *     of limit/continue; after a 410 on list, resourceVersion="" (a
 *     consistent read); a relist after a watch's 410 uses the last RV
 *   - watch from the list's RV with allowWatchBookmarks=true and
 *     timeoutSeconds drawn from [300, 600]; BOOKMARK and every event
 *     advance the RV; a clean end re-watches from it, no relist
 *   - 410 Expired, as HTTP 410 or an in-stream ERROR event, relists at
 *     once (a second 410 in a row backs off first), and the relist
 *     deletes what is gone (k8s_store__replace)
 *   - 429, 5xx, refused or dropped connections back off 0.8 s doubling to
 *     30 s with jitter (reset after 2 minutes without backing off) and
 *     honour Retry-After; refused/429/dropped re-watch without a relist.
 *     client-go's reflector (NewExponentialBackoffManager(800ms, 30s,
 *     2min, 2.0, 1.0)) draws from [d, 2d) and so waits up to 60 s at its
 *     cap; here the draw is capped at 30 s, inside that bound
 *   - 404 (CRD not installed or removed): empties the store, retried
 *     quietly, picked up when the CRD appears; 403: one log line naming
 *     verb, group and resource, retried quietly; 401: token re-read
 * One thread per reflector; events and objects are capped in size.
 */
#ifndef MM_AGENT_K8S_REFLECTOR_H
#define MM_AGENT_K8S_REFLECTOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct k8s_config;
struct k8s_store;
struct k8s_http_stats;

struct k8s_resource {
	const char *group; /* "" for the core group */
	const char *version;
	const char *plural;
	const char *kind;
	const char *field_selector; /* NULL or "spec.nodeName=n1" */
	const char *label_selector;
};

enum k8s_watch_state {
	K8S_W_STARTING,
	K8S_W_LISTING,
	K8S_W_WATCHING,
	K8S_W_BACKOFF,      /* waiting after an error */
	K8S_W_ABSENT,       /* 404: resource (CRD) not installed */
	K8S_W_FORBIDDEN,    /* 403 */
	K8S_W_UNAUTHORIZED, /* 401 even with a fresh token */
	K8S_W__N,
};

enum k8s_err {
	K8S_E_401,
	K8S_E_403,
	K8S_E_404,
	K8S_E_410,
	K8S_E_429,
	K8S_E_5XX,
	K8S_E_4XX,       /* other client errors */
	K8S_E_TRANSPORT, /* refused, reset, TLS, timeout */
	K8S_E_DECODE,    /* not JSON, or an object over the cap */
	K8S_E__N,
};

struct k8s_reflector_stats {
	_Atomic int state;        /* enum k8s_watch_state */
	_Atomic bool synced;      /* a list completed at least once */
	_Atomic uint64_t lists;   /* list calls that completed */
	_Atomic uint64_t relists; /* lists after the first */
	_Atomic uint64_t watches; /* watch requests */
	_Atomic uint64_t events;  /* ADDED/MODIFIED/DELETED applied */
	_Atomic uint64_t bookmarks;
	_Atomic uint64_t errors[K8S_E__N];
	/* CLOCK_MONOTONIC: list done, event or bookmark */
	_Atomic uint64_t last_sync_ns;
	_Atomic uint64_t objects;
	_Atomic uint64_t backoff_ms; /* the last wait */
	_Atomic bool watch_up; /* a watch stream is open (the server said 200) */
	/* watches opened again after a failure and backoff */
	_Atomic uint64_t watch_restarts;
};

struct k8s_reflector_opts {
	const struct k8s_resource *res;
	struct k8s_config *cfg;
	struct k8s_store *store;
	const char *user_agent;
	struct k8s_http_stats *http_stats;
	uint32_t page_size;      /* list limit; 0: 500 */
	uint32_t min_watch_s;    /* timeoutSeconds in [min, 2*min]; 0: 300 */
	size_t max_object_bytes; /* 0: 4 MiB */
	uint32_t backoff_initial_ms; /* 0: 800 */
	uint32_t backoff_max_ms;     /* 0: 30000 */
	uint32_t backoff_reset_s; /* no backoff this long resets it; 0: 120 */
	uint32_t idle_timeout_s;  /* no byte on a watch this long: 0: 150 */
};

struct k8s_reflector;

struct k8s_reflector *k8s_reflector__start(const struct k8s_reflector_opts *o);
/* Ask it to stop; returns at once. */
void k8s_reflector__stop(struct k8s_reflector *r);
/* Stop, join and free. */
void k8s_reflector__free(struct k8s_reflector *r);
struct k8s_reflector_stats *k8s_reflector__stats(struct k8s_reflector *r);
const struct k8s_resource *
k8s_reflector__resource(const struct k8s_reflector *r);
const char *k8s_watch_state__name(enum k8s_watch_state s);
const char *k8s_err__name(enum k8s_err e);

#endif /* MM_AGENT_K8S_REFLECTOR_H */
