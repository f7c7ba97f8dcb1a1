// SPDX-License-Identifier: Apache-2.0
/*
 * shutdown_race server PORT CONNS
 * shutdown_race client PORT CONNS
 *
 * A proxy-like server whose connections are shut down by one thread while
 * another reads them, and a client that keeps every request head open.
 * The agent traces the server (--proxy-pid): each read ends inside a head,
 * so the agent saves the head's route state (mm_route_accs, and the head's
 * copy in mm_conn_exts when the route table may defer), and each
 * shutdown(SHUT_RDWR) ends the connection (conn_finish) on another CPU
 * while reads are parsed. What test_close_race.sh checks: no entry
 * outlives its connection.
 *
 * server: accepts CONNS connections one at a time; for each, a reader
 * thread recv()s until end of stream, and the main thread, once the reader
 * has read twice (or after 1 s), waits 0-60 us (varied) and shuts the
 * socket down. Prints "listening" when ready and, at the end,
 * "conns N reads R raced S read_conns C": R reads in all (what the agent
 * parsed), S connections shut down after their second read, while reads
 * went on, C connections read from at all (a connection whose client sent
 * nothing before the 1 s deadline is never seen by the agent, nor by the
 * proxy).
 * client: for each of CONNS connections sends a request line, a Host and
 * an endless header value in 16-byte sends until the server goes away
 * (or 256 KiB, then waits for it to). Exit 0 when done, 1 on an error, 2
 * on bad usage.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct reader {
	int fd;
	atomic_uint reads;
};

static void *read_all(void *arg)
{
	struct reader *r = arg;
	char buf[4096];

	while (recv(r->fd, buf, sizeof(buf), 0) > 0)
		atomic_fetch_add(&r->reads, 1);
	return NULL;
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void spin_ns(unsigned long long ns)
{
	unsigned long long end = now_ns() + ns;

	while (now_ns() < end)
		;
}

static int serve(int port, int conns)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	unsigned long long reads = 0, raced = 0, read_conns = 0, start,
			   deadline;
	int one = 1, ls, i;

	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 ||
	    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 64)) {
		perror("shutdown_race: listen");
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	for (i = 0; i < conns; i++) {
		struct reader r = { .fd = accept(ls, NULL, NULL) };
		pthread_t t;

		if (r.fd < 0 || pthread_create(&t, NULL, read_all, &r)) {
			perror("shutdown_race: accept");
			return 1;
		}
		/*
		 * Spun on, not slept on: the reader then shares one CPU with the
		 * client, and its reads are in flight more of the time (5-15 left
		 * entries in 3 000 connections without the fix, against 1-2 when
		 * waiting yields). Past 10 ms the machine is busy: yield.
		 */
		start = now_ns();
		deadline = start + 1000000000ULL;
		while (atomic_load(&r.reads) < 2 && now_ns() < deadline)
			if (now_ns() - start > 10000000ULL)
				sched_yield();
		raced += atomic_load(&r.reads) >= 2;
		/* a different instant of the reader's next read each time */
		spin_ns((i * 7919ULL) % 60000);
		shutdown(r.fd, SHUT_RDWR);
		pthread_join(t, NULL);
		reads += atomic_load(&r.reads);
		read_conns += atomic_load(&r.reads) > 0;
		close(r.fd);
	}
	printf("conns %d reads %llu raced %llu read_conns %llu\n", conns, reads,
	       raced, read_conns);
	return 0;
}

static int send_heads(int port, int conns)
{
	static const char head[] =
		"GET /race HTTP/1.1\r\nHost: www.shop.test\r\nX-Long: ";
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char fill[16];
	int one = 1, i, fd;
	size_t sent;

	memset(fill, 'a', sizeof(fill));
	for (i = 0; i < conns; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
			perror("shutdown_race: connect");
			return 1;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (send(fd, head, sizeof(head) - 1, MSG_NOSIGNAL) < 0) {
			perror("shutdown_race: send");
			return 1;
		}
		for (sent = 0; sent < (256 << 10); sent += sizeof(fill))
			if (send(fd, fill, sizeof(fill), MSG_NOSIGNAL) < 0)
				break;
		/* the server's FIN or reset (it may not have accepted yet) */
		while (recv(fd, fill, sizeof(fill), 0) > 0)
			;
		close(fd);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int port = argc == 4 ? atoi(argv[2]) : 0,
	    conns = argc == 4 ? atoi(argv[3]) : 0;

	if (port <= 0 || port > 65535 || conns <= 0) {
		fprintf(stderr,
			"usage: shutdown_race server|client PORT CONNS\n");
		return 2;
	}
	if (!strcmp(argv[1], "server"))
		return serve(port, conns);
	if (!strcmp(argv[1], "client"))
		return send_heads(port, conns);
	fprintf(stderr, "usage: shutdown_race server|client PORT CONNS\n");
	return 2;
}
