/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One request to the API server over libcurl: TLS with the cluster CA,
 * bearer token or client certificate, HTTP/1.1 keep-alive per handle.
 * Bodies go to a callback as they arrive (a watch never ends on its own)
 * or into a buffer. A stop flag aborts a transfer within a second.
 */
#ifndef MM_AGENT_K8S_HTTP_H
#define MM_AGENT_K8S_HTTP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct k8s_config;
struct k8s_http;

/* Return non-zero to abort the transfer. */
typedef int (*k8s_http_data_fn)(const char *buf, size_t len, void *ctx);

struct k8s_req {
	const char *method;       /* GET, POST, PUT, PATCH, DELETE */
	const char *path;         /* "/apis/...?query", already escaped */
	const char *content_type; /* for a body */
	const char *body;
	size_t body_len;
	k8s_http_data_fn on_data; /* NULL: collect into resp.body */
	/* called with the status when a response's headers have all arrived */
	void (*on_open)(long status, void *ctx);
	void *ctx;
	uint32_t idle_timeout_s; /* abort when nothing arrives this long */
	uint32_t timeout_s;      /* whole transfer; 0: none (watch) */
	size_t max_body;         /* collected body cap (0: 64 MiB) */
};

struct k8s_resp {
	long status;          /* HTTP status, 0 when none arrived */
	uint32_t retry_after; /* seconds, 0 when absent */
	char *body; /* collected body (on_data NULL), NUL-terminated */
	size_t body_len;
	bool aborted;    /* on_data or the stop flag ended it */
	char error[256]; /* transport error text */
};

/* Totals for the cost figures and self-metrics. */
struct k8s_http_stats {
	_Atomic uint64_t requests;
	_Atomic uint64_t bytes_in;
	_Atomic uint64_t token_rereads_401;
};

struct k8s_http *k8s_http__new(struct k8s_config *cfg, const char *user_agent,
			       const atomic_bool *stop,
			       struct k8s_http_stats *stats);
void k8s_http__free(struct k8s_http *h);
/*
 * 0 when an HTTP response arrived (any status; see resp->status) or
 * on_data aborted it; -ECONNREFUSED, -ETIMEDOUT, -EPROTO... for transport
 * failures (resp->error says more). A 401 re-reads the token file and
 * retries once, as client-go does. Free resp with k8s_http__resp_free().
 */
int k8s_http__do(struct k8s_http *h, const struct k8s_req *req,
		 struct k8s_resp *resp);
void k8s_http__resp_free(struct k8s_resp *resp);

#endif /* MM_AGENT_K8S_HTTP_H */
