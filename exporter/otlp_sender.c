// SPDX-License-Identifier: Apache-2.0
/*
 * The OTLP/HTTP sender thread; see otlp_sender.h. The thread owns the
 * queue's head: it claims it, sends it with otlp_http (lock released), and
 * decides from the outcome whether it goes, stays for a retry, or is given
 * up. Enqueueing only ever takes the lock for a list append.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include <curl/curl.h>

#include "exporter/otlp_endpoint.h"
#include "exporter/otlp_gzip.h"
#include "exporter/otlp_http.h"
#include "exporter/otlp_queue.h"
#include "exporter/otlp_retry.h"
#include "exporter/otlp_sender.h"

struct otlp_sender {
	struct otlp_sender_opts o; /* with defaults; no borrowed strings */
	struct otlp_logger log;
	struct otlp_http *http;
	pthread_t thread;
	bool thread_started;

	pthread_mutex_t lock;
	pthread_cond_t cond; /* queue changed, or stop requested */
	struct otlp_queue q;
	struct otlp_sender_stats st; /* all but the queue_* and dropped_* */
	uint64_t next_attempt_ns;    /* CLOCK_MONOTONIC; head waits until */
	bool stopping;
	uint64_t flush_deadline_ns;
	uint64_t abort_at_ns; /* atomic; 0: none */
	unsigned int seed;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint64_t retry_delay_ms(struct otlp_sender *s,
			       const struct otlp_http_result *r,
			       uint32_t attempts)
{
	if (r->retry_after_ms >= 0)
		return (uint64_t)r->retry_after_ms > s->o.retry_after_max_ms
			       ? s->o.retry_after_max_ms
			       : (uint64_t)r->retry_after_ms;
	return otlp_retry__backoff_ms(attempts, s->o.backoff_initial_ms,
				      s->o.backoff_max_ms, &s->seed);
}

/* gzip once, on the first attempt, off the enqueueing thread. */
static int maybe_compress(struct otlp_sender *s, struct otlp_batch *b)
{
	void *z;
	size_t zlen;

	if (!s->o.gzip || b->compressed)
		return 0;
	if (otlp_gzip__compress(b->buf, b->len, &z, &zlen) < 0) {
		otlp_log(&s->log, LOG_ERR,
			 "gzip of a %zu byte batch failed; "
			 "dropped",
			 b->len);
		return -ENOMEM;
	}
	pthread_mutex_lock(&s->lock);
	otlp_queue__replace(&s->q, b, z, zlen);
	b->compressed = true;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static void timed_wait(struct otlp_sender *s, uint64_t until_ns)
{
	struct timespec ts = {
		.tv_sec = until_ns / 1000000000ULL,
		.tv_nsec = until_ns % 1000000000ULL,
	};

	pthread_cond_timedwait(&s->cond, &s->lock, &ts);
}

/* Book one attempt's outcome (lock held). */
static void account(struct otlp_sender *s, struct otlp_batch *b,
		    const struct otlp_http_result *r)
{
	s->st.attempts++;
	s->st.last_status = r->status;
	s->st.connections += r->connects;
	b->attempts++;
	switch (r->outcome) {
	case OTLP_HTTP_SENT:
		s->st.successes++;
		s->st.sent_bytes += b->len;
		if (r->rejected) {
			s->st.partial_successes++;
			if (r->rejected > 0)
				s->st.rejected_points += r->rejected;
		}
		s->next_attempt_ns = 0;
		otlp_queue__done(&s->q, b, true);
		break;
	case OTLP_HTTP_RETRY:
		s->st.retries++;
		s->next_attempt_ns =
			mono_ns() +
			retry_delay_ms(s, r, b->attempts) * 1000000ULL;
		otlp_queue__done(&s->q, b, false);
		break;
	default:
		s->st.failures++;
		s->next_attempt_ns = 0;
		otlp_queue__done(&s->q, b, true);
		break;
	}
}

static void *sender_main(void *arg)
{
	struct otlp_sender *s = arg;
	struct otlp_http_result r;
	struct otlp_batch *b;
	uint64_t now, until;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		now = mono_ns();
		if (s->stopping && (!s->q.head || now >= s->flush_deadline_ns))
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

		/* Logging happens unlocked: a log hook may read the stats. */
		if (maybe_compress(s, b) < 0)
			r = (struct otlp_http_result){
				.outcome = OTLP_HTTP_GIVE_UP
			};
		else
			otlp_http__post(s->http, b->buf, b->len, b->header,
					&s->abort_at_ns, &r);

		pthread_mutex_lock(&s->lock);
		if (r.outcome == OTLP_HTTP_ABORTED)
			otlp_queue__done(&s->q, b, false);
		else
			account(s, b, &r);
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
	otlp_http__free(s->http);
	otlp_queue__fini(&s->q);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

static void apply_defaults(struct otlp_sender_opts *o)
{
	if (!o->queue_max_bytes)
		o->queue_max_bytes = 16 << 20;
	if (!o->connect_timeout_ms)
		o->connect_timeout_ms = 5000;
	if (!o->timeout_ms)
		o->timeout_ms = 10000;
	if (!o->backoff_initial_ms)
		o->backoff_initial_ms = 1000;
	if (!o->backoff_max_ms)
		o->backoff_max_ms = 30000;
	if (o->backoff_max_ms < o->backoff_initial_ms)
		o->backoff_max_ms = o->backoff_initial_ms;
	if (!o->retry_after_max_ms)
		o->retry_after_max_ms = 300000;
}

struct otlp_sender *otlp_sender__start(const struct otlp_sender_opts *o,
				       char *err, size_t errlen)
{
	struct otlp_sender_opts full = *o;
	struct otlp_sender *s;
	pthread_condattr_t ca;
	char *url = NULL;
	int ret;

	pthread_once(&curl_once, curl_init_once);
	apply_defaults(&full);
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->log = (struct otlp_logger){ o->log, o->log_ctx };
	s->seed = (unsigned int)mono_ns() ^ (unsigned int)(uintptr_t)s;
	otlp_queue__init(&s->q, full.queue_max_bytes);
	pthread_mutex_init(&s->lock, NULL);
	/* Deadlines are CLOCK_MONOTONIC: wall-clock steps must not stall us. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);

	ret = otlp_endpoint__resolve(o->endpoint, o->endpoint_exact, &url, err,
				     errlen);
	if (ret) {
		if (ret == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		goto cleanup;
	}
	s->http = otlp_http__new(&full, url, &s->log, err, errlen);
	free(url);
	if (!s->http)
		goto cleanup;
	/* Everything borrowed was consumed above; keep no dangling copies. */
	s->o = full;
	s->o.endpoint = s->o.headers = NULL;
	s->o.ca_file = s->o.client_cert = s->o.client_key = NULL;
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
	return otlp_sender__enqueue_with(s, buf, len, NULL);
}

int otlp_sender__enqueue_with(struct otlp_sender *s, void *buf, size_t len,
			      const char *header)
{
	char *hdr = header ? strdup(header) : NULL;
	uint64_t before, after;
	int ret;

	if (header && !hdr) {
		free(buf);
		return -ENOMEM;
	}

	pthread_mutex_lock(&s->lock);
	if (s->stopping) {
		pthread_mutex_unlock(&s->lock);
		free(buf);
		free(hdr);
		return -ESHUTDOWN;
	}
	before = s->q.dropped_batches;
	ret = otlp_queue__push(&s->q, buf, len);
	if (!ret)
		s->q.tail->header = hdr;
	else
		free(hdr);
	after = s->q.dropped_batches;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (ret == -EMSGSIZE) {
		otlp_log(&s->log, LOG_ERR,
			 "a %zu byte OTLP batch exceeds the "
			 "whole queue (%zu bytes) and was dropped; raise the "
			 "queue size or send fewer points per request",
			 len, s->o.queue_max_bytes);
	} else if (after != before &&
		   1ULL << (63 - __builtin_clzll(after)) > before) {
		/* Logged at 1, 2, 4, 8, ... drops: visible, never a flood. */
		otlp_log(&s->log, LOG_WARNING,
			 "OTLP queue full (%zu bytes): "
			 "%llu oldest batches dropped so far; is %s reachable?",
			 s->o.queue_max_bytes, (unsigned long long)after,
			 otlp_http__url(s->http));
	}
	return ret;
}

int otlp_sender__emit(void *sender, void *buf, size_t len, size_t npoints)
{
	int ret = otlp_sender__enqueue(sender, buf, len);

	return ret == -ESHUTDOWN ? ret : 0;
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
		otlp_log(&s->log, LOG_WARNING,
			 "stopping with %zu unsent OTLP "
			 "batches (%zu bytes); dropped",
			 s->q.batches, s->q.bytes);
	sender_free(s);
}

const char *otlp_sender__url(const struct otlp_sender *s)
{
	return otlp_http__url(s->http);
}
