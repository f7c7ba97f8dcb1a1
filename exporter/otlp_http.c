// SPDX-License-Identifier: Apache-2.0
/*
 * OTLP/HTTP requests over one reused curl handle; see otlp_http.h. Keeping
 * the handle (and the multi handle's connection cache) keeps the connection
 * and TLS session to the collector open between export intervals.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "exporter/otlp_headers.h"
#include "exporter/otlp_http.h"
#include "exporter/otlp_pb.h"
#include "exporter/otlp_retry.h"

#ifndef MM_VERSION
#define MM_VERSION "0.0.0-dev"
#endif

#define RESP_MAX (64 * 1024)

struct otlp_http {
	struct otlp_logger log;
	char *url;
	struct otlp_headers headers;
	struct curl_slist *hlist;
	CURL *curl;
	CURLM *multi; /* drives curl so a stop can cut a request short */
	/* per request */
	char retry_after[64];
	char *resp;
	size_t resp_len;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	struct otlp_http *h = ctx;
	size_t len = size * n, vlen;
	const char *v;

	if (len > 12 && !strncasecmp(p, "Retry-After:", 12)) {
		v = p + 12;
		vlen = len - 12;
		while (vlen && (*v == ' ' || *v == '\t')) {
			v++;
			vlen--;
		}
		while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n'))
			vlen--;
		if (vlen >= sizeof(h->retry_after))
			vlen = sizeof(h->retry_after) - 1;
		memcpy(h->retry_after, v, vlen);
		h->retry_after[vlen] = 0;
	}
	return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct otlp_http *h = ctx;
	size_t len = size * n, keep = len;
	char *nr;

	/* Only the start matters (partial_success or an error message). */
	if (h->resp_len + keep > RESP_MAX)
		keep = RESP_MAX - h->resp_len;
	if (keep) {
		nr = realloc(h->resp, h->resp_len + keep);
		if (!nr)
			return len;
		h->resp = nr;
		memcpy(h->resp + h->resp_len, p, keep);
		h->resp_len += keep;
	}
	return len;
}

static int on_debug(CURL *c, curl_infotype type, char *data, size_t size,
		    void *ctx)
{
	struct otlp_http *h = ctx;
	static const char *const what[] = {
		[CURLINFO_TEXT] = "*",
		[CURLINFO_HEADER_IN] = "<",
		[CURLINFO_HEADER_OUT] = ">",
	};
	char out[2048];

	/* Bodies are binary protobuf; only text and headers are traced. */
	if (type != CURLINFO_TEXT && type != CURLINFO_HEADER_IN &&
	    type != CURLINFO_HEADER_OUT)
		return 0;
	otlp_headers__redact(&h->headers, data, size, out, sizeof(out));
	otlp_log(&h->log, LOG_DEBUG, "curl %s %s", what[type], out);
	return 0;
}

static int load_headers(struct otlp_http *h, const struct otlp_sender_opts *o,
			char *err, size_t errlen)
{
	static const char *const fixed[] = {
		"Content-Type: application/x-protobuf",
		/* a 1 s stall on every large POST otherwise */
		"Expect:",
	};
	const char *spec = o->headers, *origin = "OTLP headers";
	struct curl_slist *l;
	size_t i;
	int ret;

	if (!spec && !o->no_env_headers) {
		origin = "OTEL_EXPORTER_OTLP_METRICS_HEADERS";
		spec = getenv(origin);
		if (!spec) {
			origin = "OTEL_EXPORTER_OTLP_HEADERS";
			spec = getenv(origin);
		}
	}
	ret = otlp_headers__parse(&h->headers, spec, origin, err, errlen);
	if (ret)
		return ret;
	for (i = 0; i < 2; i++) {
		l = curl_slist_append(h->hlist, fixed[i]);
		if (!l)
			return -ENOMEM;
		h->hlist = l;
	}
	if (o->gzip) {
		l = curl_slist_append(h->hlist, "Content-Encoding: gzip");
		if (!l)
			return -ENOMEM;
		h->hlist = l;
	}
	for (i = 0; i < h->headers.n; i++) {
		l = curl_slist_append(h->hlist, h->headers.lines[i]);
		if (!l)
			return -ENOMEM;
		h->hlist = l;
	}
	return 0;
}

static int setup_curl(struct otlp_http *h, const struct otlp_sender_opts *o)
{
	CURLcode rc = CURLE_OK;
	CURL *c;

	h->curl = c = curl_easy_init();
	h->multi = curl_multi_init();
	if (!h->curl || !h->multi)
		return -ENOMEM;
#define SET(opt, val)                                                          \
	do {                                                                   \
		if (rc == CURLE_OK)                                            \
			rc = curl_easy_setopt(c, opt, val);                    \
	} while (0)
	SET(CURLOPT_URL, h->url);
	SET(CURLOPT_POST, 1L);
	SET(CURLOPT_HTTPHEADER, h->hlist);
	SET(CURLOPT_USERAGENT, "milometer/" MM_VERSION);
	/* We run in our own thread; signals for timeouts would hit others. */
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_CONNECTTIMEOUT_MS, (long)o->connect_timeout_ms);
	SET(CURLOPT_TIMEOUT_MS, (long)o->timeout_ms);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, h);
	SET(CURLOPT_WRITEFUNCTION, on_body);
	SET(CURLOPT_WRITEDATA, h);
	/* Redirects would re-POST credentials to wherever they point. */
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	/* curl copies string options: the caller's may go away. */
	if (o->ca_file && *o->ca_file)
		SET(CURLOPT_CAINFO, o->ca_file);
	if (o->client_cert && *o->client_cert)
		SET(CURLOPT_SSLCERT, o->client_cert);
	if (o->client_key && *o->client_key)
		SET(CURLOPT_SSLKEY, o->client_key);
	if (o->debug) {
		SET(CURLOPT_DEBUGFUNCTION, on_debug);
		SET(CURLOPT_DEBUGDATA, h);
		SET(CURLOPT_VERBOSE, 1L);
	}
#undef SET
	return rc == CURLE_OK ? 0 : -EINVAL;
}

struct otlp_http *otlp_http__new(const struct otlp_sender_opts *o,
				 const char *url, const struct otlp_logger *log,
				 char *err, size_t errlen)
{
	struct otlp_http *h = calloc(1, sizeof(*h));
	int ret;

	if (!h) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	h->log = *log;
	h->url = strdup(url);
	if (!h->url) {
		snprintf(err, errlen, "out of memory");
		goto cleanup;
	}
	if (o->ca_file && *o->ca_file && access(o->ca_file, R_OK)) {
		snprintf(err, errlen, "OTLP CA file %s: %s", o->ca_file,
			 strerror(errno));
		goto cleanup;
	}
	ret = load_headers(h, o, err, errlen);
	if (ret) {
		if (ret == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		goto cleanup;
	}
	ret = setup_curl(h, o);
	if (ret) {
		snprintf(err, errlen,
			 ret == -ENOMEM
				 ? "out of memory"
				 : "libcurl refused the OTLP options (older "
				   "than "
				   "7.85, without CURLOPT_PROTOCOLS_STR?)");
		goto cleanup;
	}
	return h;
cleanup:
	otlp_http__free(h);
	return NULL;
}

void otlp_http__free(struct otlp_http *h)
{
	if (!h)
		return;
	if (h->multi)
		curl_multi_cleanup(h->multi);
	if (h->curl)
		curl_easy_cleanup(h->curl);
	curl_slist_free_all(h->hlist);
	otlp_headers__free(&h->headers);
	free(h->resp);
	free(h->url);
	free(h);
}

const char *otlp_http__url(const struct otlp_http *h)
{
	return h->url;
}

/* partial_success of a 2xx answer: rejected points, -1 message only. */
static int64_t check_partial(struct otlp_http *h)
{
	otlp_pb_response *r;
	int64_t rejected = 0;
	char *ctype = NULL;

	if (!h->resp_len)
		return 0;
	/* A JSON or text body is not ours to parse (some proxies answer). */
	curl_easy_getinfo(h->curl, CURLINFO_CONTENT_TYPE, &ctype);
	if (ctype && strncasecmp(ctype, "application/x-protobuf", 22) &&
	    strncasecmp(ctype, "application/protobuf", 20))
		return 0;
	r = otlp_pb_response__unpack((const uint8_t *)h->resp, h->resp_len);
	if (!r) {
		otlp_log(&h->log, LOG_WARNING,
			 "%s answered 2xx with a body "
			 "that is not an ExportMetricsServiceResponse (%zu "
			 "bytes); ignored",
			 h->url, h->resp_len);
		return 0;
	}
	if (r->partial_success &&
	    (r->partial_success->rejected_data_points > 0 ||
	     (r->partial_success->error_message &&
	      *r->partial_success->error_message))) {
		rejected = r->partial_success->rejected_data_points;
		otlp_log(&h->log, LOG_WARNING,
			 "collector rejected %lld data "
			 "points: %.300s",
			 (long long)rejected,
			 r->partial_success->error_message
				 ? r->partial_success->error_message
				 : "");
		/* A warning-only partial success counts as one too. */
		if (rejected <= 0)
			rejected = -1;
	}
	otlp_pb_response__free(r);
	return rejected;
}

/* A short printable excerpt of an error body for the log. */
static void body_excerpt(const struct otlp_http *h, char *out, size_t n)
{
	size_t i, o = 0;

	for (i = 0; i < h->resp_len && o + 1 < n && i < 200; i++) {
		unsigned char c = h->resp[i];

		out[o++] = c >= 0x20 && c < 0x7f ? c : '.';
	}
	out[o] = 0;
}

static bool abort_due(const uint64_t *abort_at_ns)
{
	uint64_t at = abort_at_ns
			      ? __atomic_load_n(abort_at_ns, __ATOMIC_RELAXED)
			      : 0;

	return at && mono_ns() >= at;
}

/*
 * curl_easy_perform() through our multi handle, checking the abort
 * deadline every 50 ms: curl's own progress callback can be a second late
 * when nothing moves.
 */
static CURLcode perform(struct otlp_http *h, const uint64_t *abort_at_ns)
{
	CURLcode rc = CURLE_OK;
	int running = 1, left;
	CURLMsg *msg;

	if (curl_multi_add_handle(h->multi, h->curl) != CURLM_OK)
		return CURLE_FAILED_INIT;
	while (running) {
		if (curl_multi_perform(h->multi, &running) != CURLM_OK) {
			rc = CURLE_FAILED_INIT;
			break;
		}
		if (!running)
			break;
		if (abort_due(abort_at_ns)) {
			rc = CURLE_ABORTED_BY_CALLBACK;
			goto out;
		}
		curl_multi_poll(h->multi, NULL, 0, 50, NULL);
	}
	while ((msg = curl_multi_info_read(h->multi, &left)))
		if (msg->msg == CURLMSG_DONE && msg->easy_handle == h->curl)
			rc = msg->data.result;
out:
	curl_multi_remove_handle(h->multi, h->curl);
	return rc;
}

void otlp_http__post(struct otlp_http *h, const void *body, size_t len,
		     const char *header, const uint64_t *abort_at_ns,
		     struct otlp_http_result *r)
{
	/* this batch's own header, before the configured ones */
	struct curl_slist one = { .data = (char *)header, .next = h->hlist };
	char excerpt[256];
	CURLcode rc;

	*r = (struct otlp_http_result){ .retry_after_ms = -1 };
	h->retry_after[0] = 0;
	h->resp_len = 0;
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, header ? &one : h->hlist);
	rc = perform(h, abort_at_ns);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, h->hlist);
	curl_easy_getinfo(h->curl, CURLINFO_NUM_CONNECTS, &r->connects);
	if (rc == CURLE_ABORTED_BY_CALLBACK) {
		r->outcome = OTLP_HTTP_ABORTED;
		return;
	}
	if (rc != CURLE_OK) {
		otlp_log(&h->log, LOG_WARNING, "POST %s failed: %s; will retry",
			 h->url, curl_easy_strerror(rc));
		r->outcome = OTLP_HTTP_RETRY;
		return;
	}
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &r->status);
	if (r->status >= 200 && r->status < 300) {
		r->outcome = OTLP_HTTP_SENT;
		r->rejected = check_partial(h);
		return;
	}
	body_excerpt(h, excerpt, sizeof(excerpt));
	if (otlp_retry__retryable(r->status)) {
		if (h->retry_after[0])
			r->retry_after_ms = otlp_retry__after_ms(h->retry_after,
								 time(NULL));
		otlp_log(&h->log, LOG_WARNING,
			 "POST %s: HTTP %ld%s%s; will "
			 "retry",
			 h->url, r->status,
			 h->retry_after[0] ? ", Retry-After: " : "",
			 h->retry_after);
		r->outcome = OTLP_HTTP_RETRY;
		return;
	}
	otlp_log(&h->log, LOG_ERR,
		 "POST %s: HTTP %ld, batch of %zu bytes "
		 "dropped (not retryable): %s",
		 h->url, r->status, len, excerpt);
	r->outcome = OTLP_HTTP_GIVE_UP;
}
