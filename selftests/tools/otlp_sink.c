// SPDX-License-Identifier: Apache-2.0
/*
 * otlp_sink: a small OTLP/HTTP metrics receiver for tests.
 *
 *   bin/otlp_sink [--port N] [--port-file F] [--dir D] [--status CODE]
 *                 [--script CODE[:RETRY_AFTER],...] [--partial N[:MSG]]
 *                 [--tls-cert PEM --tls-key PEM] [--delay-ms N] [--quiet]
 *
 * Listens on 127.0.0.1 (port 0: any free one, printed and written to
 * --port-file), accepts POST /v1/metrics (Content-Encoding gzip or none),
 * checks that the body is a well-formed ExportMetricsServiceRequest (400 if
 * not), stores it decompressed as D/req-NNNNNN.pb (decode with
 * protoc --decode=opentelemetry.proto.collector.metrics.v1.
 * ExportMetricsServiceRequest --proto_path=exporter otlp_metrics.proto)
 * with its request headers in D/req-NNNNNN.headers ("name: value" lines),
 * and prints one line per request. Answers follow --script in order (e.g.
 * "503:2,200": a 503 with Retry-After: 2, then 200), then --status
 * (default 200). --partial makes 200 answers carry a partial_success.
 * GET /stats returns "requests N\nvalid N\ninvalid N\n". With --tls-cert
 * and --tls-key it speaks https; --delay-ms holds every answer back (for
 * timeout tests).
 *
 * The unit tests compile this file in (OTLP_SINK_NO_MAIN) and drive the same
 * code in-process through otlp_sink__start() and friends.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "exporter/otlp_gzip.h"
#include "exporter/otlp_pb.h"

#define SINK_MAX_BODY   (64u << 20)
#define SINK_MAX_SCRIPT 64
#define SINK_MAX_KEEP   256

struct otlp_sink_opts {
	uint16_t port;      /* 0: any free port */
	const char *dir;    /* store bodies here; NULL: don't */
	const char *script; /* "503:2,200" */
	int status;         /* after the script; 0: 200 */
	int64_t partial;    /* rejected_data_points in 200 answers */
	const char *partial_msg;
	const char *tls_cert; /* PEM files: serve https */
	const char *tls_key;
	unsigned delay_ms; /* before answering an export */
	bool quiet;
};

/* What one request looked like, kept for in-process tests. */
struct otlp_sink_req {
	uint64_t mono_ns; /* arrival, CLOCK_MONOTONIC */
	int status;       /* what we answered */
	bool valid;       /* decoded as ExportMetricsServiceRequest */
	bool gzip;
	size_t wire_len; /* body as received */
	void *body;      /* decompressed */
	size_t body_len;
	char *headers; /* "name: value\n" per request header */
	size_t points;
};

struct script_step {
	int status;
	int retry_after; /* -1: no header */
};

struct otlp_sink {
	struct otlp_sink_opts o;
	struct MHD_Daemon *d;
	uint16_t port;
	struct script_step script[SINK_MAX_SCRIPT];
	size_t nscript, next_step;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned requests, valid, invalid;
	struct otlp_sink_req reqs[SINK_MAX_KEEP];
	char *cert, *key;
};

struct conn {
	char *body;
	size_t len;
	bool too_big;
};

static uint64_t sink_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int parse_script(struct otlp_sink *k, const char *spec, char *err,
			size_t errlen)
{
	const char *p = spec;

	while (p && *p) {
		struct script_step st = { .retry_after = -1 };
		char *end;

		if (k->nscript == SINK_MAX_SCRIPT) {
			snprintf(err, errlen, "--script: at most %d steps",
				 SINK_MAX_SCRIPT);
			return -EINVAL;
		}
		st.status = strtol(p, &end, 10);
		if (end == p || st.status < 100 || st.status > 599)
			goto bad;
		if (*end == ':') {
			p = end + 1;
			st.retry_after = strtol(p, &end, 10);
			if (end == p || st.retry_after < 0)
				goto bad;
		}
		if (*end && *end != ',')
			goto bad;
		k->script[k->nscript++] = st;
		p = *end ? end + 1 : end;
	}
	return 0;
bad:
	snprintf(err, errlen,
		 "--script \"%s\": write CODE[:RETRY_AFTER],... "
		 "e.g. 503:2,200",
		 spec);
	return -EINVAL;
}

static enum MHD_Result collect_header(void *ctx, enum MHD_ValueKind kind,
				      const char *key, const char *value)
{
	char **dump = ctx;
	char *n;

	if (asprintf(&n, "%s%s: %s\n", *dump ? *dump : "", key,
		     value ? value : "") < 0)
		return MHD_NO;
	free(*dump);
	*dump = n;
	return MHD_YES;
}

static size_t count_points(const otlp_pb_request *r)
{
	size_t n = 0, i, j, k;

	for (i = 0; i < r->n_resource_metrics; i++) {
		const otlp_pb_resource_metrics *rm = r->resource_metrics[i];

		for (j = 0; j < rm->n_scope_metrics; j++) {
			const otlp_pb_scope_metrics *sm = rm->scope_metrics[j];

			for (k = 0; k < sm->n_metrics; k++) {
				const otlp_pb_metric *m = sm->metrics[k];

				switch (m->data_case) {
				case OTLP_PBC(METRIC__DATA_GAUGE):
					n += m->gauge->n_data_points;
					break;
				case OTLP_PBC(METRIC__DATA_SUM):
					n += m->sum->n_data_points;
					break;
				case OTLP_PBC(METRIC__DATA_HISTOGRAM):
					n += m->histogram->n_data_points;
					break;
				case OTLP_PBC(
					METRIC__DATA_EXPONENTIAL_HISTOGRAM):
					n += m->exponential_histogram
						     ->n_data_points;
					break;
				case OTLP_PBC(METRIC__DATA_SUMMARY):
					n += m->summary->n_data_points;
					break;
				default:
					break;
				}
			}
		}
	}
	return n;
}

static void store_file(const char *path, const void *b, size_t len)
{
	FILE *f = fopen(path, "w");

	if (!f || fwrite(b, 1, len, f) != len)
		fprintf(stderr, "otlp_sink: cannot write %s: %s\n", path,
			strerror(errno));
	if (f)
		fclose(f);
}

/* The body, and its request headers beside it (req-NNNNNN.headers). */
static void store_body(struct otlp_sink *k, unsigned idx, const void *b,
		       size_t len, const char *headers)
{
	char path[4096];

	if (!k->o.dir)
		return;
	snprintf(path, sizeof(path), "%s/req-%06u.headers", k->o.dir, idx);
	store_file(path, headers ? headers : "", headers ? strlen(headers) : 0);
	/* the body last: a test polling for req-*.pb then finds both */
	snprintf(path, sizeof(path), "%s/req-%06u.pb", k->o.dir, idx);
	store_file(path, b, len);
}

static enum MHD_Result reply(struct MHD_Connection *c, int status,
			     const void *body, size_t len, const char *ctype,
			     int retry_after)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	char ra[32];

	r = MHD_create_response_from_buffer(len, (void *)body,
					    MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	if (ctype)
		MHD_add_response_header(r, "Content-Type", ctype);
	if (retry_after >= 0) {
		snprintf(ra, sizeof(ra), "%d", retry_after);
		MHD_add_response_header(r, "Retry-After", ra);
	}
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result answer_export(struct otlp_sink *k,
				     struct MHD_Connection *c, struct conn *cn)
{
	const char *enc = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						      "Content-Encoding");
	struct otlp_sink_req rq = { .mono_ns = sink_now_ns(),
				    .wire_len = cn->len };
	struct script_step step = { 200, -1 };
	otlp_pb_request *req = NULL;
	void *body = NULL;
	size_t blen = 0, rlen;
	uint8_t rbuf[1024];
	unsigned idx;
	enum MHD_Result ret;

	MHD_get_connection_values(c, MHD_HEADER_KIND, collect_header,
				  &rq.headers);
	rq.gzip = enc && !strcasecmp(enc, "gzip");
	if (cn->too_big) {
		rq.valid = false;
	} else if (rq.gzip) {
		rq.valid = !otlp_gzip__decompress(cn->body, cn->len,
						  SINK_MAX_BODY, &body, &blen);
	} else {
		body = cn->body;
		blen = cn->len;
		cn->body = NULL;
		rq.valid = true;
	}
	if (rq.valid) {
		req = otlp_pb_request__unpack(body, blen);
		rq.valid = req != NULL;
		if (req)
			rq.points = count_points(req);
	}

	pthread_mutex_lock(&k->lock);
	idx = ++k->requests;
	if (!rq.valid) {
		k->invalid++;
		step.status = 400;
	} else {
		k->valid++;
		if (k->next_step < k->nscript)
			step = k->script[k->next_step++];
		else if (k->o.status)
			step.status = k->o.status;
	}
	rq.status = step.status;
	rq.body = body;
	rq.body_len = blen;
	body = NULL;
	/*
	 * The file is there before the request counts (a test polling
	 * /stats then reads it). Tests look at the first SINK_MAX_KEEP
	 * requests in memory; files are written for all.
	 */
	if (rq.valid)
		store_body(k, idx, rq.body, rq.body_len, rq.headers);
	if (idx <= SINK_MAX_KEEP)
		k->reqs[idx - 1] = rq;
	pthread_cond_broadcast(&k->cond);
	pthread_mutex_unlock(&k->lock);

	if (idx > SINK_MAX_KEEP) {
		free(rq.headers);
		free(rq.body);
	}
	if (!k->o.quiet)
		printf("otlp_sink: #%u POST /v1/metrics %zu bytes%s %s "
		       "points=%zu -> %d%s\n",
		       idx, rq.wire_len, rq.gzip ? " gzip" : "",
		       rq.valid ? "valid" : "INVALID", rq.points, step.status,
		       step.retry_after >= 0 ? " (Retry-After)" : "");
	if (req)
		otlp_pb_request__free(req);
	if (k->o.delay_ms)
		usleep(k->o.delay_ms * 1000);

	if (step.status >= 200 && step.status < 300) {
		otlp_pb_response resp =
			OTLP_PBC(EXPORT_METRICS_SERVICE_RESPONSE__INIT);
		otlp_pb_partial ps =
			OTLP_PBC(EXPORT_METRICS_PARTIAL_SUCCESS__INIT);

		if (k->o.partial || k->o.partial_msg) {
			ps.rejected_data_points = k->o.partial;
			if (k->o.partial_msg)
				ps.error_message = (char *)k->o.partial_msg;
			resp.partial_success = &ps;
		}
		rlen = protobuf_c_message_get_packed_size(&resp.base);
		if (rlen > sizeof(rbuf))
			return MHD_NO;
		protobuf_c_message_pack(&resp.base, rbuf);
		ret = reply(c, step.status, rbuf, rlen,
			    "application/x-protobuf", -1);
	} else {
		const char *msg =
			rq.valid ? "otlp_sink: scripted error\n"
				 : "otlp_sink: body is not a gzip/plain "
				   "ExportMetricsServiceRequest\n";

		ret = reply(c, step.status, msg, strlen(msg), "text/plain",
			    step.retry_after);
	}
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *data,
				  size_t *data_size, void **con_cls)
{
	struct otlp_sink *k = cls;
	struct conn *cn = *con_cls;
	char stats[128];
	int n;

	if (!strcmp(method, "GET") && !strcmp(url, "/stats")) {
		pthread_mutex_lock(&k->lock);
		n = snprintf(stats, sizeof(stats),
			     "requests %u\nvalid %u\ninvalid %u\n", k->requests,
			     k->valid, k->invalid);
		pthread_mutex_unlock(&k->lock);
		return reply(c, 200, stats, n, "text/plain", -1);
	}
	if (strcmp(method, "POST") || strcmp(url, "/v1/metrics"))
		return reply(c, 404, "not found\n", 10, "text/plain", -1);
	if (!cn) {
		cn = calloc(1, sizeof(*cn));
		if (!cn)
			return MHD_NO;
		*con_cls = cn;
		return MHD_YES;
	}
	if (*data_size) {
		if (cn->len + *data_size > SINK_MAX_BODY) {
			cn->too_big = true;
		} else {
			char *nb = realloc(cn->body, cn->len + *data_size);

			if (!nb)
				return MHD_NO;
			cn->body = nb;
			memcpy(cn->body + cn->len, data, *data_size);
			cn->len += *data_size;
		}
		*data_size = 0;
		return MHD_YES;
	}
	return answer_export(k, c, cn);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct conn *cn = *con_cls;

	if (cn) {
		free(cn->body);
		free(cn);
		*con_cls = NULL;
	}
}

void otlp_sink__stop(struct otlp_sink *k);

static char *read_file(const char *path, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (getdelim(&buf, &len, 0, f) < 0) {
		snprintf(err, errlen, "%s: cannot read", path);
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

struct otlp_sink *otlp_sink__start(const struct otlp_sink_opts *o, char *err,
				   size_t errlen)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	const union MHD_DaemonInfo *di;
	struct otlp_sink *k = calloc(1, sizeof(*k));
	unsigned int flags;

	if (!k) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	k->o = *o;
	pthread_mutex_init(&k->lock, NULL);
	pthread_cond_init(&k->cond, NULL);
	if (parse_script(k, o->script, err, errlen) < 0)
		goto fail;
	sa.sin_port = htons(o->port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!o->tls_cert != !o->tls_key) {
		snprintf(err, errlen, "--tls-cert and --tls-key go together");
		goto fail;
	}
	/* A thread per connection: a --delay-ms answer holds up no other. */
	flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION;
	if (!o->quiet)
		flags |= MHD_USE_ERROR_LOG;
	if (o->tls_cert) {
		k->cert = read_file(o->tls_cert, err, errlen);
		k->key = k->cert ? read_file(o->tls_key, err, errlen) : NULL;
		if (!k->key)
			goto fail;
		k->d = MHD_start_daemon(
			flags | MHD_USE_TLS, 0, NULL, NULL, on_request, k,
			MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED,
			on_completed, k, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
			MHD_OPTION_HTTPS_MEM_CERT, k->cert,
			MHD_OPTION_HTTPS_MEM_KEY, k->key, MHD_OPTION_END);
	} else {
		k->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, k,
					MHD_OPTION_SOCK_ADDR, &sa,
					MHD_OPTION_NOTIFY_COMPLETED,
					on_completed, k,
					MHD_OPTION_CONNECTION_TIMEOUT, 30u,
					MHD_OPTION_END);
	}
	if (!k->d) {
		snprintf(err, errlen, "cannot listen on 127.0.0.1:%u (in use?)",
			 o->port);
		goto fail;
	}
	di = MHD_get_daemon_info(k->d, MHD_DAEMON_INFO_BIND_PORT);
	k->port = di ? di->port : o->port;
	return k;
fail:
	otlp_sink__stop(k);
	return NULL;
}

uint16_t otlp_sink__port(const struct otlp_sink *k)
{
	return k->port;
}

unsigned otlp_sink__requests(struct otlp_sink *k)
{
	unsigned n;

	pthread_mutex_lock(&k->lock);
	n = k->requests;
	pthread_mutex_unlock(&k->lock);
	return n;
}

/* Wait until at least n requests arrived; false on timeout. */
bool otlp_sink__wait(struct otlp_sink *k, unsigned n, int timeout_ms)
{
	struct timespec ts;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&k->lock);
	while (k->requests < n)
		if (pthread_cond_timedwait(&k->cond, &k->lock, &ts))
			break;
	ok = k->requests >= n;
	pthread_mutex_unlock(&k->lock);
	return ok;
}

/* Request i (1-based) as recorded; valid while the sink lives. */
const struct otlp_sink_req *otlp_sink__req(struct otlp_sink *k, unsigned i)
{
	const struct otlp_sink_req *r = NULL;

	pthread_mutex_lock(&k->lock);
	if (i >= 1 && i <= k->requests && i <= SINK_MAX_KEEP)
		r = &k->reqs[i - 1];
	pthread_mutex_unlock(&k->lock);
	return r;
}

void otlp_sink__stop(struct otlp_sink *k)
{
	unsigned i;

	if (!k)
		return;
	if (k->d)
		MHD_stop_daemon(k->d);
	for (i = 0; i < SINK_MAX_KEEP; i++) {
		free(k->reqs[i].body);
		free(k->reqs[i].headers);
	}
	pthread_mutex_destroy(&k->lock);
	pthread_cond_destroy(&k->cond);
	free(k->cert);
	free(k->key);
	free(k);
}

#ifndef OTLP_SINK_NO_MAIN
static volatile sig_atomic_t quit;

static void on_signal(int sig)
{
	quit = 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: otlp_sink [--port N] [--port-file F] [--dir D] "
		   "[--status CODE]\n"
		   "                 [--script CODE[:RETRY_AFTER],...] "
		   "[--partial N[:MSG]]\n"
		   "                 [--tls-cert PEM --tls-key PEM] "
		   "[--delay-ms N] "
		   "[--quiet]\n");
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "port-file", required_argument, NULL, 'P' },
		{ "dir", required_argument, NULL, 'd' },
		{ "status", required_argument, NULL, 's' },
		{ "script", required_argument, NULL, 'S' },
		{ "partial", required_argument, NULL, 'r' },
		{ "tls-cert", required_argument, NULL, 'c' },
		{ "tls-key", required_argument, NULL, 'k' },
		{ "delay-ms", required_argument, NULL, 'D' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct otlp_sink_opts o = {};
	const char *port_file = NULL;
	sigset_t block, old;
	struct otlp_sink *k;
	char err[256], *colon;
	int c;

	while ((c = getopt_long(argc, argv, "p:P:d:s:S:r:c:k:D:qh", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'p':
			o.port = atoi(optarg);
			break;
		case 'P':
			port_file = optarg;
			break;
		case 'd':
			o.dir = optarg;
			break;
		case 's':
			o.status = atoi(optarg);
			if (o.status < 100 || o.status > 599) {
				fprintf(stderr,
					"otlp_sink: --status %s is "
					"not an HTTP status\n",
					optarg);
				return 2;
			}
			break;
		case 'S':
			o.script = optarg;
			break;
		case 'r':
			o.partial = strtoll(optarg, &colon, 10);
			if (*colon == ':')
				o.partial_msg = colon + 1;
			break;
		case 'c':
			o.tls_cert = optarg;
			break;
		case 'k':
			o.tls_key = optarg;
			break;
		case 'D':
			o.delay_ms = atoi(optarg);
			break;
		case 'q':
			o.quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	k = otlp_sink__start(&o, err, sizeof(err));
	if (!k) {
		fprintf(stderr, "otlp_sink: %s\n", err);
		return 1;
	}
	if (port_file) {
		FILE *f = fopen(port_file, "w");

		if (!f || fprintf(f, "%u\n", otlp_sink__port(k)) < 0) {
			fprintf(stderr, "otlp_sink: cannot write %s\n",
				port_file);
			otlp_sink__stop(k);
			return 1;
		}
		fclose(f);
	}
	printf("otlp_sink: listening on 127.0.0.1:%u\n", otlp_sink__port(k));
	/* Blocked outside sigsuspend(): a signal cannot slip in between
	 * the check and the wait. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	while (!quit)
		sigsuspend(&old);
	printf("otlp_sink: %u requests, %u valid, %u invalid\n", k->requests,
	       k->valid, k->invalid);
	otlp_sink__stop(k);
	return 0;
}
#endif /* OTLP_SINK_NO_MAIN */
