// SPDX-License-Identifier: Apache-2.0
/*
 * The OTLP/HTTP sender thread; see otlp_sender.h. One curl easy handle is
 * reused for every request so the connection (and TLS session) to the
 * collector stays open between export intervals.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "exporter/otlp_gzip.h"
#include "exporter/otlp_headers.h"
#include "exporter/otlp_pb.h"
#include "exporter/otlp_queue.h"
#include "exporter/otlp_retry.h"
#include "exporter/otlp_sender.h"

#ifndef MM_VERSION
#define MM_VERSION "0.0.0-dev"
#endif

#define RESP_MAX (64 * 1024)

struct otlp_sender {
	struct otlp_sender_opts o;
	char *url;
	char *ca_file, *client_cert, *client_key;
	struct otlp_headers headers;
	struct curl_slist *hlist;
	CURL *curl;
	CURLM *multi; /* drives curl so stop() can cut a request short */
	pthread_t thread;
	bool thread_started;

	pthread_mutex_t lock;
	pthread_cond_t cond; /* queue changed, or stop requested */
	struct otlp_queue q;
	struct otlp_sender_stats st; /* all but the queue_* and dropped_* */
	uint64_t next_attempt_ns;    /* CLOCK_MONOTONIC; head waits until */
	bool stopping;
	uint64_t flush_deadline_ns;
	uint64_t abort_at_ns;        /* atomic; 0: none */
	unsigned int seed;

	/* per request, sender thread only */
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

static void slog(struct otlp_sender *s, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void slog(struct otlp_sender *s, int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (s->o.log)
		s->o.log(s->o.log_ctx, level, msg);
	else
		fprintf(stderr, "milometer: otlp: %s\n", msg);
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	struct otlp_sender *s = ctx;
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
		if (vlen >= sizeof(s->retry_after))
			vlen = sizeof(s->retry_after) - 1;
		memcpy(s->retry_after, v, vlen);
		s->retry_after[vlen] = 0;
	}
	return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct otlp_sender *s = ctx;
	size_t len = size * n, keep = len;
	char *nr;

	/* Only the start matters (partial_success or an error message). */
	if (s->resp_len + keep > RESP_MAX)
		keep = RESP_MAX - s->resp_len;
	if (keep) {
		nr = realloc(s->resp, s->resp_len + keep);
		if (!nr)
			return len;
		s->resp = nr;
		memcpy(s->resp + s->resp_len, p, keep);
		s->resp_len += keep;
	}
	return len;
}

static int on_debug(CURL *c, curl_infotype type, char *data, size_t size,
		    void *ctx)
{
	struct otlp_sender *s = ctx;
	static const char *const what[] = {
		[CURLINFO_TEXT] = "*", [CURLINFO_HEADER_IN] = "<",
		[CURLINFO_HEADER_OUT] = ">",
	};
	char out[2048];

	/* Bodies are binary protobuf; only text and headers are traced. */
	if (type != CURLINFO_TEXT && type != CURLINFO_HEADER_IN &&
	    type != CURLINFO_HEADER_OUT)
		return 0;
	otlp_headers__redact(&s->headers, data, size, out, sizeof(out));
	slog(s, LOG_DEBUG, "curl %s %s", what[type], out);
	return 0;
}

static int resolve_url(struct otlp_sender *s, const char *endpoint,
		       bool exact, char *err, size_t errlen)
{
	static const char suffix[] = "/v1/metrics";
	char *scheme = NULL, *host = NULL, *path = NULL, *url = NULL;
	char *np = NULL, *user = NULL;
	CURLU *u;
	int ret = -EINVAL;
	size_t plen;

	if (!endpoint || !*endpoint) {
		snprintf(err, errlen, "OTLP endpoint is not set: configure "
			 "it or OTEL_EXPORTER_OTLP_ENDPOINT as "
			 "http://COLLECTOR:4318 or https://COLLECTOR:4318");
		return -EINVAL;
	}
	u = curl_url();
	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, endpoint,
			 CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		snprintf(err, errlen, "OTLP endpoint \"%s\" is not a URL: "
			 "write it as http://HOST:4318 or https://HOST:4318",
			 endpoint);
		goto cleanup;
	}
	if (strcasecmp(scheme, "http") && strcasecmp(scheme, "https")) {
		snprintf(err, errlen, "OTLP endpoint \"%s\": scheme \"%s\" is "
			 "not supported; OTLP/HTTP needs http:// or https://",
			 endpoint, scheme);
		goto cleanup;
	}
	if (!*host) {
		snprintf(err, errlen, "OTLP endpoint \"%s\" has no host",
			 endpoint);
		goto cleanup;
	}
	/* The URL is logged; credentials belong in (redacted) headers. */
	if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK) {
		snprintf(err, errlen, "OTLP endpoint has user:password@ in it; "
			 "pass credentials as headers instead "
			 "(OTEL_EXPORTER_OTLP_HEADERS=Authorization=...)");
		goto cleanup;
	}
	if (curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
		goto cleanup;
	plen = strlen(path);
	while (plen && path[plen - 1] == '/')
		plen--;
	if (exact) {
		/* keep the path, trailing slash and all */
		plen = strlen(path);
		if (asprintf(&np, "%s", path) < 0) {
			np = NULL;
			ret = -ENOMEM;
			goto cleanup;
		}
	} else if (asprintf(&np, "%.*s%s", (int)plen, path,
		     plen >= sizeof(suffix) - 1 &&
		     !memcmp(path + plen - (sizeof(suffix) - 1), suffix,
			     sizeof(suffix) - 1) ? "" : suffix) < 0) {
		np = NULL;
		ret = -ENOMEM;
		goto cleanup;
	}
	if (curl_url_set(u, CURLUPART_PATH, np, 0) != CURLUE_OK)
		goto cleanup;
	if (curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK)
		goto cleanup;
	s->url = strdup(url);
	ret = s->url ? 0 : -ENOMEM;
cleanup:
	free(np);
	curl_free(scheme);
	curl_free(user);
	curl_free(host);
	curl_free(path);
	curl_free(url);
	curl_url_cleanup(u);
	return ret;
}

static int load_headers(struct otlp_sender *s, const struct otlp_sender_opts *o,
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
	ret = otlp_headers__parse(&s->headers, spec, origin, err, errlen);
	if (ret)
		return ret;
	for (i = 0; i < 2; i++) {
		l = curl_slist_append(s->hlist, fixed[i]);
		if (!l)
			return -ENOMEM;
		s->hlist = l;
	}
	if (o->gzip) {
		l = curl_slist_append(s->hlist, "Content-Encoding: gzip");
		if (!l)
			return -ENOMEM;
		s->hlist = l;
	}
	for (i = 0; i < s->headers.n; i++) {
		l = curl_slist_append(s->hlist, s->headers.lines[i]);
		if (!l)
			return -ENOMEM;
		s->hlist = l;
	}
	return 0;
}

static int setup_curl(struct otlp_sender *s)
{
	CURL *c = curl_easy_init();
	CURLcode rc = CURLE_OK;

	if (!c)
		return -ENOMEM;
	s->curl = c;
	s->multi = curl_multi_init();
	if (!s->multi)
		return -ENOMEM;
#define SET(opt, val) do { if (rc == CURLE_OK) rc = curl_easy_setopt(c, opt, val); } while (0)
	SET(CURLOPT_URL, s->url);
	SET(CURLOPT_POST, 1L);
	SET(CURLOPT_HTTPHEADER, s->hlist);
	SET(CURLOPT_USERAGENT, "milometer/" MM_VERSION);
	/* We run in our own thread; signals for timeouts would hit others. */
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_CONNECTTIMEOUT_MS, (long)s->o.connect_timeout_ms);
	SET(CURLOPT_TIMEOUT_MS, (long)s->o.timeout_ms);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, s);
	SET(CURLOPT_WRITEFUNCTION, on_body);
	SET(CURLOPT_WRITEDATA, s);
	/* Redirects would re-POST credentials to wherever they point. */
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	if (s->ca_file)
		SET(CURLOPT_CAINFO, s->ca_file);
	if (s->client_cert)
		SET(CURLOPT_SSLCERT, s->client_cert);
	if (s->client_key)
		SET(CURLOPT_SSLKEY, s->client_key);
	if (s->o.debug) {
		SET(CURLOPT_DEBUGFUNCTION, on_debug);
		SET(CURLOPT_DEBUGDATA, s);
		SET(CURLOPT_VERBOSE, 1L);
	}
#undef SET
	return rc == CURLE_OK ? 0 : -EINVAL;
}

/* Logs a 2xx body's partial_success; returns rejected points. */
static int64_t check_partial(struct otlp_sender *s)
{
	otlp_pb_response *r;
	int64_t rejected = 0;
	char *ctype = NULL;

	if (!s->resp_len)
		return 0;
	/* A JSON or text body is not ours to parse (some proxies answer). */
	curl_easy_getinfo(s->curl, CURLINFO_CONTENT_TYPE, &ctype);
	if (ctype && strncasecmp(ctype, "application/x-protobuf", 22) &&
	    strncasecmp(ctype, "application/protobuf", 20))
		return 0;
	r = otlp_pb_response__unpack((const uint8_t *)s->resp, s->resp_len);
	if (!r) {
		slog(s, LOG_WARNING, "%s answered 2xx with a body that is not "
		     "an ExportMetricsServiceResponse (%zu bytes); ignored",
		     s->url, s->resp_len);
		return 0;
	}
	if (r->partial_success &&
	    (r->partial_success->rejected_data_points > 0 ||
	     (r->partial_success->error_message &&
	      *r->partial_success->error_message))) {
		rejected = r->partial_success->rejected_data_points;
		slog(s, LOG_WARNING, "collector rejected %lld data points: %.300s",
		     (long long)rejected, r->partial_success->error_message ?
		     r->partial_success->error_message : "");
		/* A warning-only partial success counts as one too. */
		if (!rejected)
			rejected = -1;
	}
	otlp_pb_response__free(r);
	return rejected;
}

/* A short printable excerpt of an error body for the log. */
static void body_excerpt(const struct otlp_sender *s, char *out, size_t n)
{
	size_t i, o = 0;

	for (i = 0; i < s->resp_len && o + 1 < n && i < 200; i++) {
		unsigned char c = s->resp[i];

		out[o++] = c >= 0x20 && c < 0x7f ? c : '.';
	}
	out[o] = 0;
}

enum outcome { SENT, RETRY, GIVE_UP, ABORTED };

static bool abort_due(struct otlp_sender *s)
{
	uint64_t at = __atomic_load_n(&s->abort_at_ns, __ATOMIC_RELAXED);

	return at && mono_ns() >= at;
}

/*
 * curl_easy_perform() through our multi handle, checking the stop deadline
 * every 50 ms: curl's own progress callback can be a second late when
 * nothing moves. The multi handle keeps the connection cache, so the
 * connection is still reused between requests.
 */
static CURLcode perform(struct otlp_sender *s)
{
	CURLcode rc = CURLE_OK;
	int running = 1, left;
	CURLMsg *msg;

	if (curl_multi_add_handle(s->multi, s->curl) != CURLM_OK)
		return CURLE_FAILED_INIT;
	while (running) {
		if (curl_multi_perform(s->multi, &running) != CURLM_OK) {
			rc = CURLE_FAILED_INIT;
			break;
		}
		if (!running)
			break;
		if (abort_due(s)) {
			rc = CURLE_ABORTED_BY_CALLBACK;
			goto out;
		}
		curl_multi_poll(s->multi, NULL, 0, 50, NULL);
	}
	while ((msg = curl_multi_info_read(s->multi, &left)))
		if (msg->msg == CURLMSG_DONE && msg->easy_handle == s->curl)
			rc = msg->data.result;
out:
	curl_multi_remove_handle(s->multi, s->curl);
	return rc;
}

static enum outcome post(struct otlp_sender *s, struct otlp_batch *b,
			 long *status, long *conns)
{
	CURLcode rc;
	char excerpt[256];

	s->retry_after[0] = 0;
	s->resp_len = 0;
	*status = 0;
	curl_easy_setopt(s->curl, CURLOPT_POSTFIELDS, b->buf);
	curl_easy_setopt(s->curl, CURLOPT_POSTFIELDSIZE_LARGE,
			 (curl_off_t)b->len);
	rc = perform(s);
	*conns = 0;
	curl_easy_getinfo(s->curl, CURLINFO_NUM_CONNECTS, conns);
	if (rc == CURLE_ABORTED_BY_CALLBACK)
		return ABORTED;
	if (rc != CURLE_OK) {
		slog(s, LOG_WARNING, "POST %s failed: %s; will retry", s->url,
		     curl_easy_strerror(rc));
		return RETRY;
	}
	curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, status);
	if (*status >= 200 && *status < 300)
		return SENT;
	body_excerpt(s, excerpt, sizeof(excerpt));
	if (otlp_retry__retryable(*status)) {
		slog(s, LOG_WARNING, "POST %s: HTTP %ld%s%s; will retry",
		     s->url, *status, s->retry_after[0] ? ", Retry-After: " : "",
		     s->retry_after);
		return RETRY;
	}
	slog(s, LOG_ERR, "POST %s: HTTP %ld, batch of %zu bytes dropped "
	     "(not retryable): %s", s->url, *status, b->len, excerpt);
	return GIVE_UP;
}

static uint64_t retry_delay_ms(struct otlp_sender *s, uint32_t attempts)
{
	int64_t ra = -1;

	if (s->retry_after[0])
		ra = otlp_retry__after_ms(s->retry_after, time(NULL));
	if (ra >= 0)
		return (uint64_t)ra > s->o.retry_after_max_ms ?
			s->o.retry_after_max_ms : (uint64_t)ra;
	return otlp_retry__backoff_ms(attempts, s->o.backoff_initial_ms,
				      s->o.backoff_max_ms, &s->seed);
}

/* gzip once, on the first attempt, off the enqueueing thread. */
static void maybe_compress(struct otlp_sender *s, struct otlp_batch *b)
{
	void *z;
	size_t zlen;

	if (!s->o.gzip || b->compressed)
		return;
	if (otlp_gzip__compress(b->buf, b->len, &z, &zlen) < 0) {
		slog(s, LOG_ERR, "gzip of a %zu byte batch failed", b->len);
		return; /* sent as is below would lie about the encoding */
	}
	pthread_mutex_lock(&s->lock);
	otlp_queue__replace(&s->q, b, z, zlen);
	b->compressed = true;
	pthread_mutex_unlock(&s->lock);
}

static void timed_wait(struct otlp_sender *s, uint64_t until_ns)
{
	struct timespec ts = {
		.tv_sec = until_ns / 1000000000ULL,
		.tv_nsec = until_ns % 1000000000ULL,
	};

	pthread_cond_timedwait(&s->cond, &s->lock, &ts);
}

static void *sender_main(void *arg)
{
	struct otlp_sender *s = arg;
	struct otlp_batch *b;
	enum outcome out;
	uint64_t now, until;
	int64_t rej;
	long status, conns = 0;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		now = mono_ns();
		if (s->stopping &&
		    (!s->q.head || now >= s->flush_deadline_ns))
			break;
		if (!s->q.head) {
			pthread_cond_wait(&s->cond, &s->lock);
			continue;
		}
		if (now < s->next_attempt_ns) {
			until = s->next_attempt_ns;
			if (s->stopping && s->flush_deadline_ns < until)
				until = s->flush_deadline_ns;
			timed_wait(s, until);
			continue;
		}
		b = otlp_queue__claim(&s->q);
		pthread_mutex_unlock(&s->lock);

		maybe_compress(s, b);
		if (s->o.gzip && !b->compressed) {
			out = GIVE_UP;
			status = 0;
			conns = 0;
		} else {
			out = post(s, b, &status, &conns);
		}
		/* Parsed and logged before locking: a log hook may read stats. */
		rej = out == SENT ? check_partial(s) : 0;

		pthread_mutex_lock(&s->lock);
		if (out == ABORTED) {
			otlp_queue__done(&s->q, b, false);
			continue;
		}
		s->st.attempts++;
		s->st.last_status = status;
		s->st.connections += conns;
		b->attempts++;
		switch (out) {
		case SENT:
			s->st.successes++;
			s->st.sent_bytes += b->len;
			if (rej) {
				s->st.partial_successes++;
				if (rej > 0)
					s->st.rejected_points += rej;
			}
			s->next_attempt_ns = 0;
			otlp_queue__done(&s->q, b, true);
			break;
		case RETRY:
			s->st.retries++;
			s->next_attempt_ns = mono_ns() +
				retry_delay_ms(s, b->attempts) * 1000000ULL;
			otlp_queue__done(&s->q, b, false);
			break;
		default:
			s->st.failures++;
			s->next_attempt_ns = 0;
			otlp_queue__done(&s->q, b, true);
			break;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void sender_free(struct otlp_sender *s)
{
	if (s->multi)
		curl_multi_cleanup(s->multi);
	if (s->curl)
		curl_easy_cleanup(s->curl);
	curl_slist_free_all(s->hlist);
	otlp_headers__free(&s->headers);
	otlp_queue__fini(&s->q);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s->resp);
	free(s->url);
	free(s->ca_file);
	free(s->client_cert);
	free(s->client_key);
	free(s);
}

static char *dup_opt(const char *v, bool *fail)
{
	char *d;

	if (!v || !*v)
		return NULL;
	d = strdup(v);
	if (!d)
		*fail = true;
	return d;
}

struct otlp_sender *otlp_sender__start(const struct otlp_sender_opts *o,
				       char *err, size_t errlen)
{
	struct otlp_sender *s;
	pthread_condattr_t ca;
	const char *endpoint;
	bool fail = false, exact;
	int ret;

	pthread_once(&curl_once, curl_init_once);
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->o = *o;
	if (!s->o.queue_max_bytes)
		s->o.queue_max_bytes = 16 << 20;
	if (!s->o.connect_timeout_ms)
		s->o.connect_timeout_ms = 5000;
	if (!s->o.timeout_ms)
		s->o.timeout_ms = 10000;
	if (!s->o.backoff_initial_ms)
		s->o.backoff_initial_ms = 1000;
	if (!s->o.backoff_max_ms)
		s->o.backoff_max_ms = 30000;
	if (s->o.backoff_max_ms < s->o.backoff_initial_ms)
		s->o.backoff_max_ms = s->o.backoff_initial_ms;
	if (!s->o.retry_after_max_ms)
		s->o.retry_after_max_ms = 300000;
	s->o.headers = NULL; /* not kept: parsed below */
	s->seed = (unsigned int)mono_ns() ^ (unsigned int)(uintptr_t)s;
	otlp_queue__init(&s->q, s->o.queue_max_bytes);
	pthread_mutex_init(&s->lock, NULL);
	/* Deadlines are CLOCK_MONOTONIC: wall-clock steps must not stall us. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);

	s->ca_file = dup_opt(o->ca_file, &fail);
	s->client_cert = dup_opt(o->client_cert, &fail);
	s->client_key = dup_opt(o->client_key, &fail);
	if (fail) {
		snprintf(err, errlen, "out of memory");
		goto cleanup;
	}
	if (s->ca_file && access(s->ca_file, R_OK)) {
		snprintf(err, errlen, "OTLP CA file %s: %s", s->ca_file,
			 strerror(errno));
		goto cleanup;
	}
	endpoint = o->endpoint;
	exact = o->endpoint_exact;
	if (!endpoint) {
		endpoint = getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
		exact = endpoint != NULL;
		if (!endpoint)
			endpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	}
	ret = resolve_url(s, endpoint, exact, err, errlen);
	if (ret)
		goto cleanup;
	ret = load_headers(s, o, err, errlen);
	if (ret) {
		if (ret == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		goto cleanup;
	}
	if (setup_curl(s)) {
		snprintf(err, errlen, "libcurl refused the OTLP options "
			 "(too old for CURLOPT_PROTOCOLS_STR?)");
		goto cleanup;
	}
	ret = pthread_create(&s->thread, NULL, sender_main, s);
	if (ret) {
		snprintf(err, errlen, "cannot start the OTLP sender thread: %s",
			 strerror(ret));
		goto cleanup;
	}
	s->thread_started = true;
	return s;
cleanup:
	sender_free(s);
	return NULL;
}

int otlp_sender__enqueue(struct otlp_sender *s, void *buf, size_t len)
{
	uint64_t before, after;
	int ret;

	pthread_mutex_lock(&s->lock);
	if (s->stopping) {
		pthread_mutex_unlock(&s->lock);
		free(buf);
		return -ESHUTDOWN;
	}
	before = s->q.dropped_batches;
	ret = otlp_queue__push(&s->q, buf, len);
	after = s->q.dropped_batches;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (ret == -EMSGSIZE) {
		slog(s, LOG_ERR, "a %zu byte OTLP batch exceeds the whole "
		     "queue (%zu bytes) and was dropped; raise the queue size "
		     "or send fewer points per request", len,
		     s->o.queue_max_bytes);
	} else if (after != before &&
		   1ULL << (63 - __builtin_clzll(after)) > before) {
		/* Logged at 1, 2, 4, 8, ... drops: visible, never a flood. */
		slog(s, LOG_WARNING, "OTLP queue full (%zu bytes): %llu "
		     "oldest batches dropped so far; is %s reachable?",
		     s->o.queue_max_bytes, (unsigned long long)after, s->url);
	}
	return ret;
}

void otlp_sender__stats(struct otlp_sender *s, struct otlp_sender_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->st;
	st->dropped_batches = s->q.dropped_batches;
	st->dropped_bytes = s->q.dropped_bytes;
	st->queue_batches = s->q.batches;
	st->queue_bytes = s->q.bytes;
	pthread_mutex_unlock(&s->lock);
}

void otlp_sender__stop(struct otlp_sender *s, int flush_timeout_ms)
{
	uint64_t deadline;

	if (!s)
		return;
	if (flush_timeout_ms < 0)
		flush_timeout_ms = 0;
	deadline = mono_ns() + (uint64_t)flush_timeout_ms * 1000000ULL;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	s->flush_deadline_ns = deadline;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	/* A request still running at the deadline is cut short. */
	__atomic_store_n(&s->abort_at_ns, deadline, __ATOMIC_RELAXED);
	if (s->thread_started)
		pthread_join(s->thread, NULL);
	if (s->q.batches)
		slog(s, LOG_WARNING, "stopping with %zu unsent OTLP batches "
		     "(%zu bytes); dropped", s->q.batches, s->q.bytes);
	sender_free(s);
}

int otlp_sender__emit(void *sender, void *buf, size_t len, size_t npoints)
{
	int ret = otlp_sender__enqueue(sender, buf, len);

	return ret == -ESHUTDOWN ? ret : 0;
}

const char *otlp_sender__url(const struct otlp_sender *s)
{
	return s->url;
}
