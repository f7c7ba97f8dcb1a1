// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "agent/ring_reader.h"
#include "policy/util/log.h"

/* BPF wakes the reader at 1/8 full (loader.c); below that it reads this often */
#define POLL_MS 50
/*
 * The event loop reads the queue every 50 ms on its own; it is woken
 * sooner only when this share of the queue's bound waits (a wakeup a
 * batch, two threads instead of one, cost ~4 ms of CPU a second on a
 * 2-vCPU VM).
 */
#define WAKE_SHARE 32
/* chunks (64 KiB) handled per drain: the loop, and scrapes, get a turn */
#define DRAIN_CHUNKS 16

struct ring_reader {
	struct ring_buffer *rb;
	struct event_queue q;
	pthread_t thread;
	bool running;
	int ep;                 /* the ring's epoll fd and stop_fd */
	int ready_fd;           /* eventfd: records published */
	int stop_fd;            /* eventfd: stop after one last read */
	uint64_t wake_bytes;    /* queued bytes that wake the event loop */
	struct event_intake in; /* the reader thread's */
};

static int copy_record(void *ctx, void *data, size_t size)
{
	struct ring_reader *rr = ctx;

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

static void read_ring(struct ring_reader *rr)
{
	ring_buffer__consume(rr->rb);
	event_intake__retry(&rr->in);
	if (event_queue__publish(&rr->q) &&
	    event_queue__queued_bytes(&rr->q) >= rr->wake_bytes)
		wake(rr);
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
		read_ring(rr);
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
	rr->wake_bytes = queue_bytes / WAKE_SHARE;
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

size_t ring_reader__drain(struct ring_reader *rr,
			  int (*fn)(void *ctx, void *data, size_t size),
			  void *ctx)
{
	bool more = false;
	uint64_t v;
	size_t n;

	/* cleared before the take: a publish after it wakes the loop again */
	if (read(rr->ready_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		pr_warn("ring reader: reading its eventfd failed: %s\n",
			strerror(errno));
	n = event_queue__consume(&rr->q, DRAIN_CHUNKS, fn, ctx, &more);
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
	free(rr);
}

void ring_reader__stats(struct ring_reader *rr, struct event_queue_stats *st)
{
	event_queue__stats(&rr->q, st);
}
