// SPDX-License-Identifier: Apache-2.0
/*
 * An open-loop HTTP/1.1 load generator (wrk2's method; Debian has no wrk2):
 * one thread, epoll, N keep-alive connections, one request in flight per
 * connection. Requests are scheduled at a constant aggregate rate, request
 * i at start + i / rate, whatever the answers do; each request's latency
 * runs from its *scheduled* send time to the end of its response, so a
 * stalled server is charged for every request that should have gone out
 * meanwhile (no coordinated omission). A request due while every
 * connection is busy waits in a queue, and its wait counts.
 *
 * Usage: loadgen [-c CONNS] [-r RATE] [-d SECONDS] [-H 'Name: value']...
 *                [-o text|json] http://HOST:PORT/PATH
 * Prints sent, completed, errors (non-2xx, resets, unparsable answers,
 * requests unanswered 2 s after the end), late (sent 1 ms or more after
 * their scheduled time: the generator or the connections fell behind; a
 * run with many is not at the rate asked), and p50/p90/p99/p99.9 from a
 * log-linear histogram (2^-7 relative resolution).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SUB_BITS 7
#define SUB      (1u << SUB_BITS)
#define EXPS     40 /* up to 2^40 ns: 18 minutes */
#define LATE_NS  1000000ULL
#define DRAIN_NS 2000000000ULL
#define BUF      16384

struct conn {
	int fd;
	int busy; /* a request in flight */
	int connected;
	uint64_t sched; /* its scheduled send time */
	size_t got;     /* response bytes buffered */
	char buf[BUF];
};

static uint64_t hist[EXPS * SUB];
static uint64_t sent, completed, errors, late, reconnects;
static struct sockaddr_in addr;
static char req[4096];
static size_t req_len;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + t.tv_nsec;
}

/* log-linear bucket: SUB linear steps within each power of two */
static unsigned bucket(uint64_t v)
{
	unsigned e;

	if (v < SUB)
		return v;
	e = 63 - __builtin_clzll(v); /* >= SUB_BITS */
	if (e - SUB_BITS + 1 >= EXPS)
		return EXPS * SUB - 1;
	return (e - SUB_BITS + 1) * SUB + ((v >> (e - SUB_BITS)) - SUB);
}

static uint64_t bucket_value(unsigned b) /* the bucket's midpoint */
{
	unsigned e = b / SUB, s = b % SUB;

	if (e == 0)
		return s;
	return ((uint64_t)(SUB + s) << (e - 1)) + ((1ULL << (e - 1)) >> 1);
}

static uint64_t quantile(double q)
{
	uint64_t n = 0, want;

	for (unsigned b = 0; b < EXPS * SUB; b++)
		n += hist[b];
	if (!n)
		return 0;
	want = (uint64_t)(q * n);
	if (want >= n)
		want = n - 1;
	n = 0;
	for (unsigned b = 0; b < EXPS * SUB; b++) {
		n += hist[b];
		if (n > want)
			return bucket_value(b);
	}
	return 0;
}

static int conn_open(int ep, struct conn *c)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP };
	int one = 1;

	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (c->fd < 0)
		return -errno;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (struct sockaddr *)&addr, sizeof(addr)) &&
	    errno != EINPROGRESS) {
		int e = -errno;

		close(c->fd);
		c->fd = -1;
		return e;
	}
	c->connected = 0;
	c->busy = 0;
	c->got = 0;
	ev.data.ptr = c;
	return epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) ? -errno : 0;
}

static void conn_reset(int ep, struct conn *c)
{
	if (c->busy)
		errors++;
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	reconnects++;
	if (conn_open(ep, c))
		c->fd = -1;
}

static int conn_send(int ep, struct conn *c, uint64_t sched, uint64_t t)
{
	ssize_t n = send(c->fd, req, req_len, MSG_NOSIGNAL);

	if (n != (ssize_t)req_len) {
		/* a short send of a small request on a fresh buffer: broken */
		conn_reset(ep, c);
		return -1;
	}
	c->busy = 1;
	c->sched = sched;
	c->got = 0;
	sent++;
	if (t - sched >= LATE_NS)
		late++;
	return 0;
}

/* a whole response in c->buf: its length, 0 if incomplete, -1 if bad */
static long response_len(struct conn *c, int *status)
{
	char *end, *p;
	long clen = -1;

	c->buf[c->got] = 0;
	end = strstr(c->buf, "\r\n\r\n");
	if (!end)
		return c->got >= BUF - 1 ? -1 : 0;
	if (sscanf(c->buf, "HTTP/1.%*d %d", status) != 1)
		return -1;
	for (p = strstr(c->buf, "\r\n"); p && p < end;
	     p = strstr(p + 2, "\r\n"))
		if (!strncasecmp(p + 2, "content-length:", 15))
			clen = strtol(p + 17, NULL, 10);
	if (clen < 0) /* chunked and close-delimited bodies are not spoken */
		return *status == 204 || *status == 304 ? end + 4 - c->buf : -1;
	if ((size_t)(end + 4 - c->buf) + clen > c->got)
		return (end + 4 - c->buf) + clen >= BUF ? -1 : 0;
	return (end + 4 - c->buf) + clen;
}

static void conn_read(int ep, struct conn *c, uint64_t t)
{
	for (;;) {
		ssize_t n = recv(c->fd, c->buf + c->got, BUF - 1 - c->got, 0);
		long len;
		int status = 0;

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			conn_reset(ep, c);
			return;
		}
		if (n < 0)
			return;
		if (!c->busy) { /* nothing asked: the server is confused */
			conn_reset(ep, c);
			return;
		}
		c->got += n;
		len = response_len(c, &status);
		if (len < 0) {
			conn_reset(ep, c);
			return;
		}
		if (len == 0)
			continue;
		if ((size_t)len != c->got) { /* more than one answer */
			conn_reset(ep, c);
			return;
		}
		if (status >= 200 && status < 300) {
			completed++;
			hist[bucket(t - c->sched)]++;
		} else {
			errors++;
		}
		c->busy = 0;
		c->got = 0;
		return;
	}
}

static int parse_url(const char *url, char *host, size_t hl, int *port,
		     const char **path)
{
	const char *p, *slash;

	if (strncmp(url, "http://", 7))
		return -1;
	p = url + 7;
	slash = strchr(p, '/');
	*path = slash ? slash : "/";
	if (!slash)
		slash = p + strlen(p);
	const char *colon = memchr(p, ':', slash - p);
	size_t n = (colon ? colon : slash) - p;

	if (n >= hl)
		return -1;
	memcpy(host, p, n);
	host[n] = 0;
	*port = colon ? atoi(colon + 1) : 80;
	return 0;
}

static __attribute__((noreturn)) void usage(const char *me)
{
	fprintf(stderr,
		"usage: %s [-c CONNS] [-r RATE] [-d SECONDS] "
		"[-H 'Name: value']... [-o text|json] http://HOST:PORT/PATH\n",
		me);
	exit(2);
}

int main(int argc, char **argv)
{
	int conns = 10, opt, port = 0, ep, json = 0, has_host = 0;
	double rate = 1000, secs = 5;
	char headers[2048] = "", host[256];
	const char *path;
	struct conn *cs;
	struct epoll_event evs[256];
	uint64_t start, end, total, next = 0, t, queued = 0;
	size_t rr = 0;

	while ((opt = getopt(argc, argv, "c:r:d:H:o:")) != -1) {
		switch (opt) {
		case 'c':
			conns = atoi(optarg);
			break;
		case 'r':
			rate = atof(optarg);
			break;
		case 'd':
			secs = atof(optarg);
			break;
		case 'H':
			if (strlen(headers) + strlen(optarg) + 3 >=
			    sizeof(headers))
				usage(argv[0]);
			if (!strncasecmp(optarg, "host:", 5))
				has_host = 1;
			strcat(headers, optarg);
			strcat(headers, "\r\n");
			break;
		case 'o':
			json = !strcmp(optarg, "json");
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind != argc - 1 || conns <= 0 || rate <= 0 || secs <= 0 ||
	    parse_url(argv[optind], host, sizeof(host), &port, &path))
		usage(argv[0]);
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons(port);
	if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
		fprintf(stderr,
			"loadgen: %s: give an IPv4 address, not a name\n",
			host);
		return 2;
	}
	if (has_host)
		req_len = snprintf(req, sizeof(req),
				   "GET %s HTTP/1.1\r\n%s\r\n", path, headers);
	else
		req_len = snprintf(req, sizeof(req),
				   "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n",
				   path, host, headers);
	signal(SIGPIPE, SIG_IGN);
	/* wake at the scheduled time, not up to 50 us later (default slack):
	 * that lag would count in every request's latency */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	ep = epoll_create1(0);
	cs = calloc(conns, sizeof(*cs));
	if (ep < 0 || !cs) {
		perror("loadgen");
		return 1;
	}
	for (int i = 0; i < conns; i++) {
		int e = conn_open(ep, &cs[i]);

		if (e) {
			fprintf(stderr, "loadgen: connect to %s:%d: %s\n", host,
				port, strerror(-e));
			return 1;
		}
	}
	/* every connection up before the clock starts: setup is not a request */
	for (int up = 0; up < conns;) {
		int n = epoll_wait(ep, evs, 256, 5000);

		if (n <= 0) {
			fprintf(stderr,
				"loadgen: %d of %d connections up after 5 s\n",
				up, conns);
			return 1;
		}
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			struct epoll_event ev = {
				.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c
			};

			if (evs[i].events & (EPOLLERR | EPOLLHUP)) {
				fprintf(stderr,
					"loadgen: cannot connect to %s:%d\n",
					host, port);
				return 1;
			}
			if (!c->connected && (evs[i].events & EPOLLOUT)) {
				c->connected = 1;
				epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
				up++;
			}
		}
	}
	total = (uint64_t)(rate * secs);
	start = now_ns();
	end = start + (uint64_t)(secs * 1e9);
	for (;;) {
		struct timespec to;
		uint64_t due;
		int n, busy = 0;

		t = now_ns();
		/* every request due by now, onto free connections */
		while (next < total) {
			due = start + (uint64_t)(next * 1e9 / rate);
			if (due > t)
				break;
			size_t k;

			for (k = 0; k < (size_t)conns; k++) {
				struct conn *c = &cs[(rr + k) % conns];

				if (c->fd >= 0 && c->connected && !c->busy)
					break;
			}
			if (k == (size_t)conns)
				break; /* all busy: it waits, its wait counted */
			struct conn *c = &cs[(rr + k) % conns];

			rr = (rr + k + 1) % conns;
			if (!conn_send(ep, c, due, t))
				next++;
		}
		for (int i = 0; i < conns; i++)
			busy += cs[i].busy;
		if (next >= total && !busy)
			break;
		if (t > end + DRAIN_NS)
			break;
		due = next < total ? start + (uint64_t)(next * 1e9 / rate)
				   : end + DRAIN_NS;
		queued = due <= t ? 1 : 0;
		due = due > t ? due - t : 0;
		if (queued)
			due = 1000000; /* waiting for a free connection */
		to.tv_sec = due / 1000000000ULL;
		to.tv_nsec = due % 1000000000ULL;
		n = epoll_pwait2(ep, evs, 256, &to, NULL);
		if (n < 0 && errno != EINTR) {
			perror("loadgen: epoll_pwait2");
			return 1;
		}
		t = now_ns();
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;

			if (!c->connected) {
				struct epoll_event ev = { .events = EPOLLIN |
								    EPOLLRDHUP,
							  .data.ptr = c };

				if (evs[i].events & (EPOLLERR | EPOLLHUP)) {
					conn_reset(ep, c);
					continue;
				}
				c->connected = 1;
				epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
				continue;
			}
			conn_read(ep, c, t);
		}
	}
	t = now_ns();
	for (int i = 0; i < conns; i++)
		if (cs[i].busy)
			errors++; /* unanswered 2 s after the end */
	errors += total - next;   /* never sent */
	if (json)
		printf("{\"rate\": %.1f, \"duration_s\": %.3f, \"connections\": %d, "
		       "\"scheduled\": %llu, \"sent\": %llu, \"completed\": %llu, "
		       "\"errors\": %llu, \"late\": %llu, \"reconnects\": %llu, "
		       "\"p50_us\": %.2f, \"p90_us\": %.2f, \"p99_us\": %.2f, "
		       "\"p999_us\": %.2f}\n",
		       rate, secs, conns, (unsigned long long)total,
		       (unsigned long long)sent, (unsigned long long)completed,
		       (unsigned long long)errors, (unsigned long long)late,
		       (unsigned long long)reconnects, quantile(0.5) / 1e3,
		       quantile(0.9) / 1e3, quantile(0.99) / 1e3,
		       quantile(0.999) / 1e3);
	else
		printf("rate %.0f req/s, %d connections, %.1f s: scheduled %llu "
		       "sent %llu completed %llu errors %llu late %llu\n"
		       "latency from the scheduled send: p50 %.1f us p90 %.1f us "
		       "p99 %.1f us p99.9 %.1f us\n",
		       rate, conns, secs, (unsigned long long)total,
		       (unsigned long long)sent, (unsigned long long)completed,
		       (unsigned long long)errors, (unsigned long long)late,
		       quantile(0.5) / 1e3, quantile(0.9) / 1e3,
		       quantile(0.99) / 1e3, quantile(0.999) / 1e3);
	return 0;
}
