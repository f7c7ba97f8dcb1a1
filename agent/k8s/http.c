// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "agent/k8s/config.h"
#include "agent/k8s/http.h"

#define DEFAULT_MAX_BODY (64u << 20)

struct k8s_http {
	CURL *curl;
	struct k8s_config *cfg;
	char *ua;
	const atomic_bool *stop;
	struct k8s_http_stats *stats;
};

struct xfer {
	struct k8s_http *h;
	const struct k8s_req *req;
	struct k8s_resp *resp;
	size_t cap;
	size_t alloc;
	bool overflow;
};

struct k8s_http *k8s_http__new(struct k8s_config *cfg, const char *user_agent,
			       const atomic_bool *stop,
			       struct k8s_http_stats *stats)
{
	struct k8s_http *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->curl = curl_easy_init();
	h->ua = strdup(user_agent);
	if (!h->curl || !h->ua) {
		k8s_http__free(h);
		return NULL;
	}
	h->cfg = cfg;
	h->stop = stop;
	h->stats = stats;
	return h;
}

void k8s_http__free(struct k8s_http *h)
{
	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	free(h->ua);
	free(h);
}

void k8s_http__resp_free(struct k8s_resp *resp)
{
	free(resp->body);
	resp->body = NULL;
	resp->body_len = 0;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *p)
{
	struct xfer *x = p;
	size_t n = size * nmemb;

	if (x->h->stats)
		x->h->stats->bytes_in += n;
	/* an error status carries a Status object: always collect it */
	if (x->req->on_data && x->resp->status >= 200 &&
	    x->resp->status < 300) {
		if (x->req->on_data(ptr, n, x->req->ctx)) {
			x->resp->aborted = true;
			return 0;
		}
		return n;
	}
	if (x->resp->body_len + n > x->cap) {
		x->overflow = true;
		return 0;
	}
	if (x->resp->body_len + n + 1 > x->alloc) {
		size_t a = x->alloc ? x->alloc : 16384;
		char *b;

		while (a < x->resp->body_len + n + 1)
			a *= 2;
		b = realloc(x->resp->body, a);
		if (!b)
			return 0;
		x->resp->body = b;
		x->alloc = a;
	}
	memcpy(x->resp->body + x->resp->body_len, ptr, n);
	x->resp->body_len += n;
	x->resp->body[x->resp->body_len] = 0;
	return n;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *p)
{
	struct xfer *x = p;
	size_t n = size * nitems;

	if (n > 5 && !strncmp(buf, "HTTP/", 5)) {
		/* status line: a new response (after a 100 Continue too) */
		x->resp->status = strtol(buf + 9, NULL, 10);
		x->resp->retry_after = 0;
	} else if (n > 12 && !strncasecmp(buf, "Retry-After:", 12)) {
		/* seconds form only; the API server never sends a date */
		x->resp->retry_after = strtoul(buf + 12, NULL, 10);
	} else if ((n == 2 && buf[0] == '\r') || (n == 1 && buf[0] == '\n')) {
		/* the blank line: a watch is open before its first event */
		if (x->req->on_open && x->resp->status >= 200)
			x->req->on_open(x->resp->status, x->req->ctx);
	}
	return n;
}

static int on_progress(void *p, curl_off_t dlt, curl_off_t dln, curl_off_t ult,
		       curl_off_t uln)
{
	struct xfer *x = p;

	if (x->h->stop && atomic_load(x->h->stop)) {
		x->resp->aborted = true;
		return 1;
	}
	return 0;
}

static int map_error(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
		return -EHOSTUNREACH;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
		return -EACCES;
	case CURLE_WRITE_ERROR:
		return -EFBIG;
	default:
		return -EPROTO;
	}
}

static int once(struct k8s_http *h, const struct k8s_req *req,
		struct k8s_resp *resp, bool reread_token)
{
	struct k8s_config *c = h->cfg;
	struct curl_slist *hdrs = NULL;
	struct xfer x = { .h = h, .req = req, .resp = resp };
	char url[8192], token[8192], auth[8300], ctype[256];
	CURL *e = h->curl;
	CURLcode rc;

	x.cap = req->max_body ? req->max_body : DEFAULT_MAX_BODY;
	k8s_http__resp_free(resp);
	memset(resp, 0, sizeof(*resp));
	snprintf(url, sizeof(url), "%s%s", c->server, req->path);
	k8s_config__token(c, reread_token, token, sizeof(token));
	/* keep the connection, reset what the previous request set */
	curl_easy_reset(e);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_USERAGENT, h->ua);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 15L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https,http");
	if (req->timeout_s)
		curl_easy_setopt(e, CURLOPT_TIMEOUT, (long)req->timeout_s);
	if (req->idle_timeout_s) {
		/* a dead peer behind a NAT never sends RST: bytes must keep coming */
		curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
				 (long)req->idle_timeout_s);
	}
	if (c->ca_file)
		curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
	if (c->ca_pem) {
		struct curl_blob b = { c->ca_pem, c->ca_pem_len,
				       CURL_BLOB_COPY };

		curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
	}
	if (c->insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (c->cert_file)
		curl_easy_setopt(e, CURLOPT_SSLCERT, c->cert_file);
	if (c->key_file)
		curl_easy_setopt(e, CURLOPT_SSLKEY, c->key_file);
	if (c->cert_pem) {
		struct curl_blob b = { c->cert_pem, c->cert_pem_len,
				       CURL_BLOB_COPY };

		curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &b);
		curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
	}
	if (c->key_pem) {
		struct curl_blob b = { c->key_pem, c->key_pem_len,
				       CURL_BLOB_COPY };

		curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &b);
		curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
	}
	hdrs = curl_slist_append(hdrs, "Accept: application/json");
	if (token[0]) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		hdrs = curl_slist_append(hdrs, auth);
	}
	if (req->body) {
		snprintf(ctype, sizeof(ctype), "Content-Type: %s",
			 req->content_type ? req->content_type
					   : "application/json");
		hdrs = curl_slist_append(hdrs, ctype);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)req->body_len);
	}
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, &x);
	curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e, CURLOPT_XFERINFODATA, &x);
	if (h->stats)
		h->stats->requests++;
	rc = curl_easy_perform(e);
	curl_slist_free_all(hdrs);
	if (rc == CURLE_OK || resp->aborted)
		return 0;
	if (x.overflow) {
		snprintf(resp->error, sizeof(resp->error),
			 "response larger than %zu bytes", x.cap);
		return -EFBIG;
	}
	snprintf(resp->error, sizeof(resp->error), "%s",
		 curl_easy_strerror(rc));
	return map_error(rc);
}

int k8s_http__do(struct k8s_http *h, const struct k8s_req *req,
		 struct k8s_resp *resp)
{
	int ret = once(h, req, resp, false);

	/* client-go: on 401 forget the cached token, read the file again */
	if (!ret && resp->status == 401 && h->cfg->token_file) {
		if (h->stats)
			h->stats->token_rereads_401++;
		ret = once(h, req, resp, true);
	}
	return ret;
}
