/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Prometheus pull endpoint, on libmicrohttpd with its own polling thread:
 *   GET /metrics  the store's cumulative view; OpenMetrics 1.0.0 when Accept
 *                 asks for application/openmetrics-text, else text 0.0.4;
 *                 with opts.auth, only what the caller may read
 *   GET /healthz  200 "ok" while the server runs
 *   GET /readyz   200 "ok", or 503 with the reason ready_fn gives
 *   GET <page>    each of opts.pages (the /ui view), served on the same
 *                 path as /metrics: what guards /metrics guards them
 *   anything else 404; methods other than GET/HEAD 405
 * Requests are served one at a time (one polling thread), so scrapes never
 * collect concurrently.
 */
#ifndef MM_EXPORTER_PROM_SERVER_H
#define MM_EXPORTER_PROM_SERVER_H

#include <stddef.h>
#include <stdio.h>

#include "policy/model/metric_store.h"

struct prom_server_opts {
	/*
	 * "127.0.0.1:9464", "[::1]:9464", "localhost:9464", or ":9464" for
	 * every interface (IPv6 dual-stack, IPv4 when the host has no IPv6).
	 * Port 0 picks a free port: see prom_server__port().
	 */
	const char *listen_addr;
	struct mstore *store;
	/*
	 * Return 0 when ready; otherwise non-zero with a reason for the 503
	 * body written into why. NULL: always ready.
	 */
	int (*ready_fn)(void *ctx, char *why, size_t len);
	/*
	 * Called before each /metrics collection, without the store lock
	 * held: the place to refresh gauges such as self-metrics.
	 */
	void (*before_collect)(void *ctx);
	void *ctx;
	/*
	 * Optional OTel resource attributes, exposed as target_info; the
	 * array and strings must outlive the server.
	 */
	const struct mlabel *resource;
	size_t nresource;
	/*
	 * Labels added to every series, asked for at each scrape because they
	 * may change at run time (the cluster id): fill out[] (strings copied
	 * into buf) and return how many. NULL: none.
	 */
	size_t (*const_labels_fn)(void *ctx, struct mlabel *out, size_t max,
				  char *buf, size_t buflen);
	/* Who may read /metrics, and what of it. NULL: everyone, everything. */
	const struct prom_auth *auth;
	/* More read-only pages; the array must outlive the server. */
	const struct prom_page *pages;
	size_t npages;
};

/*
 * Access control of /metrics, kept out of the exporter (agent/authz/authz.c
 * implements it with TokenReview and SubjectAccessReview). begin() gets the
 * request's Authorization header (NULL when absent) and returns the HTTP
 * status to answer: 200 to serve, with *access NULL for everything or a
 * handle keep() is asked about for every series' subject (mstore__bind);
 * 401, 403 or 503 with the reason in msg. Filtered readers get no
 * target_info and none of opts.pages (403), and a 403 when nothing at all
 * is kept. end() frees access.
 * All three run on the server thread, begin() without the store lock.
 */
struct prom_auth {
	int (*begin)(void *ctx, struct mstore *store, const char *authorization,
		     void **access, char *msg, size_t len);
	bool (*keep)(void *access, const char *subject);
	void (*end)(void *access);
	void *ctx;
};

struct prom_page {
	const char *path; /* exact, e.g. "/ui" */
	const char *content_type;
	/* a static body ... */
	const void *body;
	size_t len;
	/* ... or one written per request (0, or negative errno: 500) */
	int (*write)(void *ctx, FILE *out);
	void *ctx;
};

/*
 * Bind, listen and start serving. On failure returns NULL with a message
 * in err that says what to fix (malformed address, address in use, ...).
 */
struct prom_server *prom_server__start(const struct prom_server_opts *opts,
				       char *err, size_t errlen);
/* The port actually bound (useful with port 0). */
int prom_server__port(const struct prom_server *srv);

/* Bytes of request head one connection may send (see prom_server.c). */
#define PROM_MAX_REQUEST (16 * 1024)
/* Stop serving and free; waits for an in-flight request. NULL is a no-op. */
void prom_server__stop(struct prom_server *srv);

#endif /* MM_EXPORTER_PROM_SERVER_H */
