// SPDX-License-Identifier: Apache-2.0
/*
 * Sender tests against a real HTTP server on 127.0.0.1: the otlp_sink tool
 * compiled in, so these also test the sink the integration tests rely on.
 */
#define OTLP_SINK_NO_MAIN
#include "selftests/tools/otlp_sink.c"

#include <sys/socket.h>
#include <sys/stat.h>

#include "exporter/otlp_encode.h"
#include "exporter/otlp_sender.h"
#include "selftests/unit/test.h"

struct logbuf {
	pthread_mutex_t lock;
	char text[1 << 16];
	size_t len;
};

static void log_to_buf(void *ctx, int level, const char *msg)
{
	struct logbuf *lb = ctx;
	size_t n = strlen(msg);

	pthread_mutex_lock(&lb->lock);
	if (lb->len + n + 2 < sizeof(lb->text)) {
		memcpy(lb->text + lb->len, msg, n);
		lb->len += n;
		lb->text[lb->len++] = '\n';
		lb->text[lb->len] = 0;
	}
	pthread_mutex_unlock(&lb->lock);
}

static bool log_has(struct logbuf *lb, const char *s)
{
	bool r;

	pthread_mutex_lock(&lb->lock);
	r = strstr(lb->text, s) != NULL;
	pthread_mutex_unlock(&lb->lock);
	return r;
}

/* A one-point request whose metric is called name. */
static void *payload(const char *name, size_t *len)
{
	struct mmetric_desc d = {
		.name = name,
		.unit = "1",
		.instrument = MI_COUNTER,
		.temporality = MT_DELTA,
		.is_int = true,
	};
	struct mpoint_view p = { .start_ns = 1, .time_ns = 2, .ivalue = 1 };
	struct otlp_encoder *e = otlp_encoder__new(NULL);
	void *buf = NULL;

	*len = 0;
	if (e && !otlp_encoder__add(e, &d, &p, 1))
		otlp_encoder__finish(e, &buf, len);
	otlp_encoder__free(e);
	return buf;
}

static int enqueue_named(struct otlp_sender *s, const char *name)
{
	size_t len;
	void *buf = payload(name, &len);

	return buf ? otlp_sender__enqueue(s, buf, len) : -ENOMEM;
}

static const char *first_metric_name(const struct otlp_sink_req *r)
{
	static char name[64];
	otlp_pb_request *req = otlp_pb_request__unpack(r->body, r->body_len);

	name[0] = 0;
	if (req && req->n_resource_metrics &&
	    req->resource_metrics[0]->n_scope_metrics &&
	    req->resource_metrics[0]->scope_metrics[0]->n_metrics)
		snprintf(name, sizeof(name), "%s",
			 req->resource_metrics[0]
				 ->scope_metrics[0]
				 ->metrics[0]
				 ->name);
	if (req)
		otlp_pb_request__free(req);
	return name;
}

static struct otlp_sender *start_sender(struct otlp_sender_opts *o,
					uint16_t port, char *url, size_t n)
{
	char err[256];
	struct otlp_sender *s;

	snprintf(url, n, "http://127.0.0.1:%u", port);
	o->endpoint = url;
	o->no_env_headers = true;
	if (!o->backoff_initial_ms)
		o->backoff_initial_ms = 10;
	if (!o->backoff_max_ms)
		o->backoff_max_ms = 50;
	s = otlp_sender__start(o, err, sizeof(err));
	if (!s)
		fprintf(stderr, "    otlp_sender__start: %s\n", err);
	return s;
}

/* Poll the sender's stats until cond holds (10 s at most). */
#define WAIT_STATS(s, st, cond)                                                \
	WAIT_FOR((otlp_sender__stats((s), &(st)), (cond)), 10000)

static uint16_t free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	uint16_t port = 0;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
	    !getsockname(fd, (struct sockaddr *)&sa, &sl))
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

TEST(otlp_sender_retry_after_then_ok)
{
	struct otlp_sink_opts ko = { .script = "503:1,200",
				     .quiet = true,
				     .dir = test__tmpdir() };
	struct otlp_sender_opts so = {};
	struct otlp_sender_stats st;
	const struct otlp_sink_req *r1, *r2;
	struct otlp_sink *k;
	struct otlp_sender *s;
	char err[256], url[64];
	size_t len;
	void *buf;

	k = otlp_sink__start(&ko, err, sizeof(err));
	ASSERT_TRUE(k, "%s", err);
	s = start_sender(&so, otlp_sink__port(k), url, sizeof(url));
	ASSERT_TRUE(s);
	buf = payload("retry.me", &len);
	ASSERT_TRUE(buf);
	ASSERT_EQ(otlp_sender__enqueue(s, buf, len), 0);
	ASSERT_TRUE(WAIT_STATS(s, st, st.successes == 1));
	ASSERT_EQ(st.attempts, 2);
	ASSERT_EQ(st.retries, 1);
	ASSERT_EQ(st.failures, 0);
	ASSERT_EQ(st.last_status, 200);
	ASSERT_EQ(st.queue_batches, 0);
	ASSERT_EQ(st.queue_bytes, 0);
	otlp_sender__stop(s, 0);
	ASSERT_EQ(otlp_sink__requests(k), 2);
	r1 = otlp_sink__req(k, 1);
	r2 = otlp_sink__req(k, 2);
	ASSERT_EQ(r1->status, 503);
	ASSERT_EQ(r2->status, 200);
	ASSERT_TRUE(r1->valid && r2->valid);
	/* Retry-After: 1 was honoured, not the 10 ms backoff. */
	ASSERT_TRUE(r2->mono_ns - r1->mono_ns >= 1000000000ULL, "gap %llu ns",
		    (unsigned long long)(r2->mono_ns - r1->mono_ns));
	ASSERT_STREQ(first_metric_name(r2), "retry.me");
	ASSERT_TRUE(
		strstr(r2->headers, "Content-Type: application/x-protobuf"));
	/* Each body is on disk for protoc --decode. */
	{
		char path[512];
		struct stat sb;

		snprintf(path, sizeof(path), "%s/req-000002.pb", ko.dir);
		ASSERT_TRUE(!stat(path, &sb) && (size_t)sb.st_size == len, "%s",
			    path);
	}
	otlp_sink__stop(k);
}

TEST(otlp_sender_400_not_retried)
{
	struct otlp_sink_opts ko = { .status = 400, .quiet = true };
	struct otlp_sender_opts so = { .log = log_to_buf };
	struct logbuf lb = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct otlp_sender_stats st;
	struct otlp_sink *k;
	struct otlp_sender *s;
	char err[256], url[64];

	so.log_ctx = &lb;
	k = otlp_sink__start(&ko, err, sizeof(err));
	ASSERT_TRUE(k, "%s", err);
	s = start_sender(&so, otlp_sink__port(k), url, sizeof(url));
	ASSERT_TRUE(s);
	ASSERT_EQ(enqueue_named(s, "bad"), 0);
	ASSERT_TRUE(WAIT_STATS(s, st, st.failures == 1));
	/*
	 * The sender books an outcome and releases or keeps the batch under
	 * one lock, so this snapshot is final: an empty queue means nothing
	 * is left to retry (no waiting for a retry that must not come).
	 */
	ASSERT_EQ(st.attempts, 1);
	ASSERT_EQ(st.retries, 0);
	ASSERT_EQ(st.successes, 0);
	ASSERT_EQ(st.last_status, 400);
	ASSERT_EQ(st.queue_batches, 0);
	otlp_sender__stop(s, 1000);
	ASSERT_EQ(otlp_sink__requests(k), 1);
	ASSERT_TRUE(log_has(&lb, "HTTP 400"), "log: %s", lb.text);
	otlp_sink__stop(k);
}

TEST(otlp_sender_partial_success_counted)
{
	struct otlp_sink_opts ko = { .partial = 3,
				     .partial_msg = "3 points too old",
				     .quiet = true };
	struct otlp_sender_opts so = { .log = log_to_buf };
	struct logbuf lb = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct otlp_sender_stats st;
	struct otlp_sink *k;
	struct otlp_sender *s;
	char err[256], url[64];

	so.log_ctx = &lb;
	k = otlp_sink__start(&ko, err, sizeof(err));
	ASSERT_TRUE(k, "%s", err);
	s = start_sender(&so, otlp_sink__port(k), url, sizeof(url));
	ASSERT_TRUE(s);
	ASSERT_EQ(enqueue_named(s, "part"), 0);
	ASSERT_TRUE(WAIT_STATS(s, st, st.successes == 1));
	/* outcome and queue are booked together: this snapshot is final */
	ASSERT_EQ(st.queue_batches, 0);
	ASSERT_EQ(st.attempts, 1);
	ASSERT_EQ(st.partial_successes, 1);
	ASSERT_EQ(st.rejected_points, 3);
	ASSERT_EQ(st.retries, 0);
	otlp_sender__stop(s, 1000);
	ASSERT_EQ(otlp_sink__requests(k), 1);
	ASSERT_TRUE(log_has(&lb, "rejected 3 data points: 3 points too old"),
		    "log: %s", lb.text);
	otlp_sink__stop(k);
}

TEST(otlp_sender_unreachable_bounded_then_resumes)
{
	struct otlp_sink_opts ko = { .quiet = true };
	struct otlp_sender_opts so = { .log = log_to_buf };
	struct logbuf lb = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct otlp_sender_stats st;
	struct otlp_sink *k;
	struct otlp_sender *s;
	char err[256], url[64], name[16];
	uint16_t port = free_port();
	size_t len, one;
	void *buf;
	int i;

	ASSERT_TRUE(port);
	so.log_ctx = &lb;
	buf = payload("m0", &one);
	free(buf);
	so.queue_max_bytes = 3 * one;
	s = start_sender(&so, port, url, sizeof(url));
	ASSERT_TRUE(s);
	for (i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "m%d", i);
		buf = payload(name, &len);
		ASSERT_EQ(len, one);
		ASSERT_EQ(otlp_sender__enqueue(s, buf, len), 0);
		otlp_sender__stats(s, &st);
		ASSERT_TRUE(st.queue_bytes <= 3 * one);
		if (i == 0) /* let the first fail and go into backoff */
			ASSERT_TRUE(WAIT_STATS(s, st, st.retries >= 1));
	}
	ASSERT_TRUE(WAIT_STATS(s, st, st.retries >= 3));
	ASSERT_EQ(st.successes, 0);
	ASSERT_EQ(st.dropped_batches, 3);
	ASSERT_EQ(st.dropped_bytes, 3 * one);
	ASSERT_EQ(st.queue_batches, 3);
	ASSERT_EQ(st.queue_bytes, 3 * one);
	ASSERT_EQ(st.last_status, 0);
	ASSERT_TRUE(log_has(&lb, "will retry"));
	/* Drops logged at the 1st and 2nd, not the 3rd. */
	ASSERT_TRUE(log_has(&lb, "2 oldest batches dropped"), "%s", lb.text);
	ASSERT_TRUE(!log_has(&lb, "3 oldest batches dropped"), "%s", lb.text);

	ko.port = port;
	k = otlp_sink__start(&ko, err, sizeof(err));
	ASSERT_TRUE(k, "%s", err);
	ASSERT_TRUE(WAIT_STATS(s, st, st.successes == 3));
	ASSERT_EQ(st.queue_batches, 0);
	otlp_sender__stop(s, 1000);
	ASSERT_EQ(otlp_sink__requests(k), 3);
	/* The newest three survived, in order. */
	ASSERT_STREQ(first_metric_name(otlp_sink__req(k, 1)), "m3");
	ASSERT_STREQ(first_metric_name(otlp_sink__req(k, 2)), "m4");
	ASSERT_STREQ(first_metric_name(otlp_sink__req(k, 3)), "m5");
	otlp_sink__stop(k);
}

TEST(otlp_sender_gzip)
{
	struct otlp_sink_opts ko = { .quiet = true };
	struct otlp_sender_opts so = { .gzip = true };
	struct otlp_sender_stats st;
	const struct otlp_sink_req *r;
	struct otlp_sink *k;
	struct otlp_sender *s;
	char err[256], url[64];
	size_t len;
	void *buf, *copy;

	k = otlp_sink__start(&ko, err, sizeof(err));
	ASSERT_TRUE(k, "%s", err);
	s = start_sender(&so, otlp_sink__port(k), url, sizeof(url));
	ASSERT_TRUE(s);
	buf = payload("zipped.metric", &len);
	copy = malloc(len);
	memcpy(copy, buf, len);
	ASSERT_EQ(otlp_sender__enqueue(s, buf, len), 0);
	ASSERT_TRUE(WAIT_STATS(s, st, st.successes == 1));
	otlp_sender__stop(s, 1000);
	r = otlp_sink__req(k, 1);
	ASSERT_TRUE(r && r->valid && r->gzip);
	ASSERT_TRUE(strstr(r->headers, "Content-Encoding: gzip"));
	ASSERT_EQ(r->body_len, len);
	ASSERT_TRUE(!memcmp(r->body, copy, len));
	ASSERT_EQ(st.sent_bytes, r->wire_len);
	free(copy);
	otlp_sink__stop(k);
}

TEST(otlp_sender_headers_sent_not_logged)
{
	struct otlp_sink_opts ko = { .script = "500,200", .quiet = true };
	struct otlp_sender_opts so = {
		.headers = "X-Api-Key = s3cr3t%2Cvalue , authorization=Bearer "
			   "tok123",
		.debug = true,
		.log = log_to_buf,
	};
	struct logbuf lb = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct otlp_sender_stats st;
	const struct otlp_sink_req *r;
	struct otlp_sink *k;
	struct otlp_sender *s;
	char err[256], url[64];

	so.log_ctx = &lb;
	k = otlp_sink__start(&ko, err, sizeof(err));
	ASSERT_TRUE(k, "%s", err);
	s = start_sender(&so, otlp_sink__port(k), url, sizeof(url));
	ASSERT_TRUE(s);
	/* The first batch gets a 500 (error logged), the second goes. */
	ASSERT_EQ(enqueue_named(s, "a"), 0);
	ASSERT_TRUE(WAIT_STATS(s, st, st.failures == 1));
	ASSERT_EQ(enqueue_named(s, "b"), 0);
	ASSERT_TRUE(WAIT_STATS(s, st, st.successes == 1));
	otlp_sender__stop(s, 1000);
	r = otlp_sink__req(k, 2);
	ASSERT_TRUE(r);
	ASSERT_TRUE(strstr(r->headers, "X-Api-Key: s3cr3t,value"), "%s",
		    r->headers);
	ASSERT_TRUE(strstr(r->headers, "authorization: Bearer tok123") ||
			    strstr(r->headers, "Authorization: Bearer tok123"),
		    "%s", r->headers);
	/* The debug trace shows the header lines, without their values. */
	ASSERT_TRUE(log_has(&lb, "X-Api-Key: [redacted]"), "%s", lb.text);
	ASSERT_TRUE(log_has(&lb, "HTTP 500"), "%s", lb.text);
	ASSERT_TRUE(!log_has(&lb, "s3cr3t"), "%s", lb.text);
	ASSERT_TRUE(!log_has(&lb, "tok123"), "%s", lb.text);
	otlp_sink__stop(k);
}

TEST(otlp_sender_env_headers)
{
	struct otlp_sink_opts ko = { .quiet = true };
	struct otlp_sender_opts so = {};
	struct otlp_sender_stats st;
	struct otlp_sink *k;
	struct otlp_sender *s;
	char err[256], url[64];

	k = otlp_sink__start(&ko, err, sizeof(err));
	ASSERT_TRUE(k, "%s", err);
	setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=acme", 1);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", otlp_sink__port(k));
	so.endpoint = url;
	s = otlp_sender__start(&so, err, sizeof(err));
	unsetenv("OTEL_EXPORTER_OTLP_HEADERS");
	ASSERT_TRUE(s, "%s", err);
	ASSERT_EQ(enqueue_named(s, "e"), 0);
	ASSERT_TRUE(WAIT_STATS(s, st, st.successes == 1));
	otlp_sender__stop(s, 1000);
	ASSERT_TRUE(strstr(otlp_sink__req(k, 1)->headers, "x-tenant: acme"));
	otlp_sink__stop(k);
}

TEST(otlp_sender_stop_flushes_and_bounds_time)
{
	struct otlp_sender_stats st;
	struct otlp_sink_opts ko = { .quiet = true };
	struct otlp_sender_opts so = { .log = log_to_buf };
	struct logbuf lb = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct otlp_sink *k;
	struct otlp_sender *s;
	char err[256], url[64];
	uint64_t t;
	int i;

	so.log_ctx = &lb;
	k = otlp_sink__start(&ko, err, sizeof(err));
	ASSERT_TRUE(k, "%s", err);
	s = start_sender(&so, otlp_sink__port(k), url, sizeof(url));
	ASSERT_TRUE(s);
	for (i = 0; i < 5; i++)
		ASSERT_EQ(enqueue_named(s, "f"), 0);
	ASSERT_TRUE(WAIT_STATS(s, st, st.successes == 5));
	/* One connection carried all five: the handle is reused. */
	ASSERT_EQ(st.connections, 1);
	for (i = 0; i < 5; i++)
		ASSERT_EQ(enqueue_named(s, "f"), 0);
	/* stop() sends what is queued before returning. */
	otlp_sender__stop(s, 5000);
	ASSERT_EQ(otlp_sink__requests(k), 10);
	otlp_sink__stop(k);

	/* Nobody listening and a long backoff: stop() still returns at the
	 * flush deadline and counts what it leaves behind. */
	so.backoff_initial_ms = 60000;
	so.backoff_max_ms = 60000;
	s = start_sender(&so, free_port(), url, sizeof(url));
	ASSERT_TRUE(s);
	ASSERT_EQ(enqueue_named(s, "g"), 0);
	t = sink_now_ns();
	otlp_sender__stop(s, 300);
	t = sink_now_ns() - t;
	ASSERT_TRUE(t < 5000000000ULL, "stop took %llu ns",
		    (unsigned long long)t);
	ASSERT_TRUE(log_has(&lb, "stopping with 1 unsent"), "%s", lb.text);
}

TEST(otlp_sender_endpoint_validation)
{
	static const struct {
		const char *in, *url, *err;
	} cases[] = {
		{ "http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/metrics" },
		{ "https://otel.example:4318/",
		  "https://otel.example:4318/v1/metrics" },
		{ "http://gw/otlp", "http://gw/otlp/v1/metrics" },
		{ "http://gw:1/v1/metrics", "http://gw:1/v1/metrics" },
		{ "ftp://gw:21", NULL, "not supported" },
		{ "grpc://gw:4317", NULL, "http:// or https://" },
		{ "", NULL, "not set" },
		{ "http://", NULL, "not a URL" },
		{ "http://bob:pw@gw:4318", NULL, "as headers instead" },
	};
	struct otlp_sender_opts so = { .no_env_headers = true };
	struct otlp_sender *s;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = 0;
		so.endpoint = cases[i].in;
		s = otlp_sender__start(&so, err, sizeof(err));
		if (cases[i].url) {
			ASSERT_TRUE(s, "%s: %s", cases[i].in, err);
			ASSERT_STREQ(otlp_sender__url(s), cases[i].url);
			otlp_sender__stop(s, 0);
		} else {
			ASSERT_TRUE(!s, "%s accepted", cases[i].in);
			ASSERT_TRUE(strstr(err, cases[i].err), "%s: %s",
				    cases[i].in, err);
		}
	}
	/* As the SDKs: METRICS_ENDPOINT as is, ENDPOINT gets the path. */
	so.endpoint = NULL;
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318", 1);
	s = otlp_sender__start(&so, err, sizeof(err));
	ASSERT_TRUE(s, "%s", err);
	ASSERT_STREQ(otlp_sender__url(s), "http://env:4318/v1/metrics");
	otlp_sender__stop(s, 0);
	setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://env:1/custom/",
	       1);
	s = otlp_sender__start(&so, err, sizeof(err));
	unsetenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	ASSERT_TRUE(s, "%s", err);
	ASSERT_STREQ(otlp_sender__url(s), "http://env:1/custom/");
	otlp_sender__stop(s, 0);
	so.endpoint = NULL;
	ASSERT_TRUE(!otlp_sender__start(&so, err, sizeof(err)));
	ASSERT_TRUE(strstr(err, "OTEL_EXPORTER_OTLP_ENDPOINT"), "%s", err);
	so.endpoint = "http://gw:4318/x";
	so.endpoint_exact = true;
	s = otlp_sender__start(&so, err, sizeof(err));
	ASSERT_TRUE(s, "%s", err);
	ASSERT_STREQ(otlp_sender__url(s), "http://gw:4318/x");
	otlp_sender__stop(s, 0);
	so.endpoint_exact = false;

	so.endpoint = "http://gw:4318";
	so.ca_file = "/nonexistent/ca.pem";
	ASSERT_TRUE(!otlp_sender__start(&so, err, sizeof(err)));
	ASSERT_TRUE(strstr(err, "/nonexistent/ca.pem"), "%s", err);
	so.ca_file = NULL;
	so.headers = "Content-Type=text/plain";
	ASSERT_TRUE(!otlp_sender__start(&so, err, sizeof(err)));
	ASSERT_TRUE(strstr(err, "set by the OTLP exporter"), "%s", err);
}

TEST(otlp_sink_script_and_invalid_body)
{
	struct otlp_sink_opts ko = { .quiet = true };
	struct otlp_sink *k;
	char err[256];

	ko.script = "503:x";
	ASSERT_TRUE(!otlp_sink__start(&ko, err, sizeof(err)));
	ASSERT_TRUE(strstr(err, "CODE[:RETRY_AFTER]"), "%s", err);
	ko.script = NULL;
	k = otlp_sink__start(&ko, err, sizeof(err));
	ASSERT_TRUE(k, "%s", err);
	{
		/* Not protobuf: the sink refuses it, as a collector would. */
		struct otlp_sender_opts so = {};
		struct otlp_sender_stats st;
		struct otlp_sender *s;
		char url[64];
		char *junk = strdup("\xff\xff\xff\xff not a request");

		s = start_sender(&so, otlp_sink__port(k), url, sizeof(url));
		ASSERT_TRUE(s);
		ASSERT_EQ(otlp_sender__enqueue(s, junk, strlen(junk)), 0);
		ASSERT_TRUE(WAIT_STATS(s, st, st.failures == 1));
		otlp_sender__stop(s, 0);
		ASSERT_EQ(st.last_status, 400);
		ASSERT_TRUE(!otlp_sink__req(k, 1)->valid);
	}
	otlp_sink__stop(k);
}

TEST(otlp_sender_tls_ca_file)
{
	struct otlp_sink_opts ko = { .quiet = true };
	struct otlp_sender_opts so = { .no_env_headers = true,
				       .backoff_initial_ms = 10,
				       .backoff_max_ms = 50,
				       .log = log_to_buf };
	struct logbuf lb = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct otlp_sender_stats st;
	struct otlp_sink *k;
	struct otlp_sender *s;
	char err[256], url[64], cert[512], key[512], cmd[2048];
	int rc;

	so.log_ctx = &lb;
	snprintf(cert, sizeof(cert), "%s/cert.pem", test__tmpdir());
	snprintf(key, sizeof(key), "%s/key.pem", test__tmpdir());
	snprintf(cmd, sizeof(cmd),
		 "openssl req -x509 -newkey ec -pkeyopt "
		 "ec_paramgen_curve:prime256v1 -nodes -days 1 -subj "
		 "/CN=localhost -addext subjectAltName=IP:127.0.0.1 "
		 "-keyout %s -out %s >/dev/null 2>&1",
		 key, cert);
	rc = system(cmd);
	ASSERT_TRUE(rc == 0, "openssl could not make a test certificate");
	ko.tls_cert = cert;
	ko.tls_key = key;
	k = otlp_sink__start(&ko, err, sizeof(err));
	ASSERT_TRUE(k, "%s", err);
	snprintf(url, sizeof(url), "https://127.0.0.1:%u", otlp_sink__port(k));
	so.endpoint = url;

	/* Trusting our CA: delivered. */
	so.ca_file = cert;
	s = otlp_sender__start(&so, err, sizeof(err));
	ASSERT_TRUE(s, "%s", err);
	ASSERT_EQ(enqueue_named(s, "tls"), 0);
	ASSERT_TRUE(WAIT_STATS(s, st, st.successes == 1), "%s", lb.text);
	otlp_sender__stop(s, 0);
	ASSERT_STREQ(first_metric_name(otlp_sink__req(k, 1)), "tls");

	/* The system CAs do not know it: a transport error, retried. */
	so.ca_file = NULL;
	s = otlp_sender__start(&so, err, sizeof(err));
	ASSERT_TRUE(s, "%s", err);
	ASSERT_EQ(enqueue_named(s, "untrusted"), 0);
	ASSERT_TRUE(WAIT_STATS(s, st, st.retries >= 2));
	ASSERT_EQ(st.successes, 0);
	ASSERT_EQ(st.last_status, 0);
	otlp_sender__stop(s, 0);
	ASSERT_EQ(otlp_sink__requests(k), 1);
	ASSERT_TRUE(log_has(&lb, "certificate") || log_has(&lb, "SSL"), "%s",
		    lb.text);
	otlp_sink__stop(k);
}

TEST(otlp_sender_timeout_retried_and_stop_aborts)
{
	struct otlp_sink_opts ko = { .quiet = true, .delay_ms = 3000 };
	struct otlp_sender_opts so = { .timeout_ms = 200, .log = log_to_buf };
	struct logbuf lb = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct otlp_sender_stats st;
	struct otlp_sink *k;
	struct otlp_sender *s;
	char err[256], url[64];
	unsigned n0;
	uint64_t t;

	so.log_ctx = &lb;
	k = otlp_sink__start(&ko, err, sizeof(err));
	ASSERT_TRUE(k, "%s", err);
	s = start_sender(&so, otlp_sink__port(k), url, sizeof(url));
	ASSERT_TRUE(s);
	ASSERT_EQ(enqueue_named(s, "slow"), 0);
	/* The answer takes longer than the request timeout: retried. */
	ASSERT_TRUE(WAIT_STATS(s, st, st.retries >= 1));
	ASSERT_EQ(st.successes, 0);
	ASSERT_EQ(st.last_status, 0);
	ASSERT_TRUE(log_has(&lb, "imeout") || log_has(&lb, "timed out"), "%s",
		    lb.text);
	otlp_sender__stop(s, 0);

	/* stop() cuts a request in flight short at the flush deadline. */
	so.timeout_ms = 60000;
	s = start_sender(&so, otlp_sink__port(k), url, sizeof(url));
	ASSERT_TRUE(s);
	n0 = otlp_sink__requests(k);
	ASSERT_EQ(enqueue_named(s, "slow2"), 0);
	/* the sink has the POST (it counts before its delay): in flight */
	ASSERT_TRUE(otlp_sink__wait(k, n0 + 1, 10000));
	t = sink_now_ns();
	otlp_sender__stop(s, 200);
	t = sink_now_ns() - t;
	ASSERT_TRUE(t < 2500000000ULL, "stop took %llu ms",
		    (unsigned long long)t / 1000000);
	test_log("stop(200 ms) with a request in flight took %llu ms\n",
		 (unsigned long long)t / 1000000);
	otlp_sink__stop(k);
}

/* The agent's export tick: store -> split requests -> sender -> collector. */
TEST(otlp_sender_emit_split_from_store)
{
	struct otlp_sink_opts ko = { .quiet = true };
	struct otlp_sender_opts so = {};
	struct mstore_opts mo = { .keep_delta = true };
	struct mmetric_desc d = {
		.name = "reqs",
		.unit = "1",
		.instrument = MI_COUNTER,
		.temporality = MT_DELTA,
		.is_int = true,
	};
	struct otlp_sender_stats st;
	struct mstore *ms = mstore__new(&mo);
	struct otlp_encoder *e = otlp_encoder__new(NULL);
	struct otlp_sink *k;
	struct otlp_sender *s;
	char err[256], url[64], v[8];
	size_t total = 0;
	unsigned i;
	int id;

	ASSERT_TRUE(ms && e);
	id = mstore__add_metric(ms, &d);
	ASSERT_TRUE(id >= 0);
	mstore__lock(ms);
	for (i = 0; i < 25; i++) {
		struct mlabel l = { "i", v };

		snprintf(v, sizeof(v), "%u", i);
		mseries__add(mstore__series(ms, id, &l, 1), 1, 1000);
	}
	mstore__unlock(ms);
	k = otlp_sink__start(&ko, err, sizeof(err));
	ASSERT_TRUE(k, "%s", err);
	s = start_sender(&so, otlp_sink__port(k), url, sizeof(url));
	ASSERT_TRUE(s);
	ASSERT_EQ(otlp_encode__store_split(e, ms, 2000, 10, otlp_sender__emit,
					   s),
		  25);
	ASSERT_TRUE(WAIT_STATS(s, st, st.successes == 3));
	otlp_sender__stop(s, 1000);
	ASSERT_EQ(otlp_sink__requests(k), 3);
	for (i = 1; i <= 3; i++) {
		ASSERT_TRUE(otlp_sink__req(k, i)->valid);
		total += otlp_sink__req(k, i)->points;
	}
	ASSERT_EQ(total, 25);
	ASSERT_EQ(otlp_sink__req(k, 3)->points, 5);
	otlp_sink__stop(k);
	otlp_encoder__free(e);
	mstore__free(ms);
}

TEST(otlp_sender_429_backoff_without_retry_after)
{
	struct otlp_sink_opts ko = { .script = "429,502,504,200",
				     .quiet = true };
	struct otlp_sender_opts so = { .backoff_initial_ms = 40,
				       .backoff_max_ms = 80,
				       .log = log_to_buf };
	struct logbuf lb = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct otlp_sender_stats st;
	struct otlp_sink *k;
	struct otlp_sender *s;
	char err[256], url[64];
	unsigned i;

	so.log_ctx = &lb;
	k = otlp_sink__start(&ko, err, sizeof(err));
	ASSERT_TRUE(k, "%s", err);
	s = start_sender(&so, otlp_sink__port(k), url, sizeof(url));
	ASSERT_TRUE(s);
	ASSERT_EQ(enqueue_named(s, "b"), 0);
	ASSERT_TRUE(WAIT_STATS(s, st, st.successes == 1));
	ASSERT_EQ(st.attempts, 4);
	ASSERT_EQ(st.retries, 3);
	otlp_sender__stop(s, 0);
	ASSERT_EQ(otlp_sink__requests(k), 4);
	/* Equal jitter: attempt n waits at least half of 40 ms * 2^(n-1),
	 * capped at 80 ms. */
	for (i = 2; i <= 4; i++) {
		uint64_t gap = otlp_sink__req(k, i)->mono_ns -
			       otlp_sink__req(k, i - 1)->mono_ns;
		uint64_t min_ms = i == 2 ? 20 : 40;

		ASSERT_TRUE(gap >= min_ms * 1000000ULL, "gap %u: %llu ns", i,
			    (unsigned long long)gap);
	}
	ASSERT_TRUE(log_has(&lb, "HTTP 429; will retry"), "%s", lb.text);
	otlp_sink__stop(k);
}
