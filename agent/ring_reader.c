// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "agent/ring_reader.h"
#include "policy/util/log.h"

/* BPF wakes the reader at 1/8 full (loader.c); below that it reads this often */
#define POLL_MS 50
/*
 * While the event loop is not busy it reads the ring itself, as a single
 * thread would (a record copied through the queue costs ~60 ns more, read
 * by two threads). This thread reads it while the loop says it is busy,
 * or when the loop has not drained for this long (a lock wait, anything
 * else that holds it).
 */
#define STALE_NS (200 * 1000000ULL)
/* chunks (64 KiB) handled per drain: the loop, and scrapes, get a turn */
#define DRAIN_CHUNKS 16

struct ring_reader {
	struct ring_buffer *rb;
	struct event_queue q;
	pthread_t thread;
	bool running;
	int ep;       /* the ring's epoll fd and stop_fd */
	int ready_fd; /* eventfd: records published */
	int stop_fd;  /* eventfd: stop after one last read */
	/* consume_lock: whoever reads the ring, the intake, the queue's fill */
	pthread_mutex_t consume_lock;
	struct event_intake in;
	/* while the loop reads the ring itself: its handler (consume_lock) */
	int (*direct_fn)(void *ctx, void *data, size_t size);
	void *direct_ctx;
	bool busy;           /* atomic: the loop is busy, this thread reads */
	uint64_t drained_ns; /* atomic: the loop's last drain, CLOCK_MONOTONIC */
};

static int copy_record(void *ctx, void *data, size_t size)
{
	struct ring_reader *rr = ctx;

	if (rr->direct_fn)
		return rr->direct_fn(rr->direct_ctx, data, size), 0;
	event_intake__record(&rr->in, data, size);
	/* a refused record is counted; the ring moves on */
	return 0;
}

static void wake(struct ring_reader *rr)
{
	static const uint64_t one = 1;

	if (write(rr->ready_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		pr_warn("ring reader: waking the event loop failed: %s\n",
			strerror(errno));
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Into the queue; consume_lock held. True when records were queued. */
static bool read_ring(struct ring_reader *rr)
{
	ring_buffer__consume(rr->rb);
	event_intake__retry(&rr->in);
	return event_queue__publish(&rr->q);
}

/*
 * Also while the loop works through a queue (it reads the ring only once
 * the queue is empty): the ring is smaller, in records, than the queue.
 */
static bool loop_away(struct ring_reader *rr)
{
	return __atomic_load_n(&rr->busy, __ATOMIC_RELAXED) ||
	       event_queue__queued_bytes(&rr->q) ||
	       mono_ns() - __atomic_load_n(&rr->drained_ns, __ATOMIC_RELAXED) >=
		       STALE_NS;
}

static void *reader_main(void *arg)
{
	struct ring_reader *rr = arg;
	struct epoll_event ev[2];

	for (;;) {
		int n = epoll_wait(rr->ep, ev, 2, POLL_MS);
		bool stop = false;

		for (int i = 0; i < n; i++)
			stop |= ev[i].data.fd == rr->stop_fd;
		/* on a stop too: what the ring holds now is queued first */
		if (stop || loop_away(rr)) {
			bool queued;

			pthread_mutex_lock(&rr->consume_lock);
			queued = read_ring(rr);
			pthread_mutex_unlock(&rr->consume_lock);
			/* seen when the loop is back */
			if (queued)
				wake(rr);
		}
		if (stop)
			return NULL;
	}
}

static int add_fd(int ep, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

struct ring_reader *ring_reader__start(int map_fd, uint64_t queue_bytes,
				       int *err)
{
	struct ring_reader *rr = calloc(1, sizeof(*rr));
	int ret;

	if (!rr) {
		*err = -ENOMEM;
		return NULL;
	}
	event_queue__init(&rr->q, queue_bytes);
	pthread_mutex_init(&rr->consume_lock, NULL);
	rr->in.q = &rr->q;
	rr->ep = rr->ready_fd = rr->stop_fd = -1;
	rr->rb = ring_buffer__new(map_fd, copy_record, rr, NULL);
	if (!rr->rb) {
		ret = -errno;
		pr_err("ring reader: opening the ring buffer failed: %s\n",
		       strerror(-ret));
		goto fail;
	}
	rr->ep = epoll_create1(EPOLL_CLOEXEC);
	rr->ready_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	rr->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (rr->ep < 0 || rr->ready_fd < 0 || rr->stop_fd < 0) {
		ret = -errno;
		goto fail_setup;
	}
	/*
	 * Edge-triggered: BPF's wakeups only. Level-triggered, the ring's
	 * epoll reports readable again after every read while records keep
	 * coming, and the thread would read a few records at a time.
	 */
	ret = add_fd(rr->ep, ring_buffer__epoll_fd(rr->rb), EPOLLIN | EPOLLET);
	if (!ret)
		ret = add_fd(rr->ep, rr->stop_fd, EPOLLIN);
	if (ret)
		goto fail_setup;
	ret = -pthread_create(&rr->thread, NULL, reader_main, rr);
	if (ret)
		goto fail_setup;
	rr->running = true;
	return rr;
fail_setup:
	pr_err("ring reader: setting up its thread failed: %s\n",
	       strerror(-ret));
fail:
	ring_reader__free(rr);
	*err = ret;
	return NULL;
}

int ring_reader__fd(const struct ring_reader *rr)
{
	return rr->ready_fd;
}

int ring_reader__ring_fd(const struct ring_reader *rr)
{
	return ring_buffer__epoll_fd(rr->rb);
}

void ring_reader__busy(struct ring_reader *rr, bool busy)
{
	__atomic_store_n(&rr->busy, busy, __ATOMIC_RELAXED);
}

size_t ring_reader__drain(struct ring_reader *rr,
			  int (*fn)(void *ctx, void *data, size_t size),
			  void *ctx)
{
	bool more = false;
	uint64_t v;
	size_t n;
	int r;

	__atomic_store_n(&rr->drained_ns, mono_ns(), __ATOMIC_RELAXED);
	/* cleared before the take: a publish after it wakes the loop again */
	if (read(rr->ready_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		pr_warn("ring reader: reading its eventfd failed: %s\n",
			strerror(errno));
	pthread_mutex_lock(&rr->consume_lock);
	/* what the thread queued goes first: the records keep their order */
	n = event_queue__consume(&rr->q, DRAIN_CHUNKS, fn, ctx, &more);
	if (!more) {
		/* gap closes the reserve had no room for: before any record */
		event_intake__retry(&rr->in);
		if (event_queue__publish(&rr->q))
			n += event_queue__consume(&rr->q, DRAIN_CHUNKS, fn, ctx,
						  &more);
	}
	if (!more) {
		if (rr->in.ngaps) {
			/* a connection's gap close waits: through the queue */
			read_ring(rr);
			n += event_queue__consume(&rr->q, DRAIN_CHUNKS, fn, ctx,
						  &more);
		} else {
			rr->direct_fn = fn;
			rr->direct_ctx = ctx;
			r = ring_buffer__consume(rr->rb);
			rr->direct_fn = NULL;
			if (r > 0)
				n += r;
		}
	}
	pthread_mutex_unlock(&rr->consume_lock);
	if (more)
		wake(rr);
	return n;
}

void ring_reader__stop(struct ring_reader *rr)
{
	static const uint64_t one = 1;

	if (!rr || !rr->running)
		return;
	if (write(rr->stop_fd, &one, sizeof(one)) < 0)
		pr_warn("ring reader: stopping its thread failed: %s\n",
			strerror(errno));
	pthread_join(rr->thread, NULL);
	rr->running = false;
}

void ring_reader__free(struct ring_reader *rr)
{
	if (!rr)
		return;
	ring_reader__stop(rr);
	ring_buffer__free(rr->rb);
	if (rr->ep >= 0)
		close(rr->ep);
	if (rr->ready_fd >= 0)
		close(rr->ready_fd);
	if (rr->stop_fd >= 0)
		close(rr->stop_fd);
	event_intake__fini(&rr->in);
	event_queue__fini(&rr->q);
	pthread_mutex_destroy(&rr->consume_lock);
	free(rr);
}

void ring_reader__stats(struct ring_reader *rr, struct event_queue_stats *st)
{
	event_queue__stats(&rr->q, st);
}
