// SPDX-License-Identifier: Apache-2.0
/*
 * bench_nodetax: what the agent costs a process that is NOT the proxy
 * (the node tax). `make bench` runs it with the agent
 * off and on and compares.
 *
 *   bench_nodetax zero ITER REPS   read 1 byte from /dev/zero, write it to
 *                                  /dev/null, ITER times (dd bs=1): two
 *                                  syscalls per iteration, no socket
 *   bench_nodetax tcp ITER REPS    1-byte ping-pong over a loopback TCP
 *                                  connection held by this one process:
 *                                  four socket syscalls per iteration
 *
 * Prints "ns_per_syscall X": the thread's CPU time per syscall
 * (CLOCK_THREAD_CPUTIME_ID: what the process pays, without the time it
 * waits for a CPU on a shared 2-CPU machine), the fastest of REPS
 * repetitions (the least disturbed by the other tenants' cache use);
 * "wall_ns_per_syscall X", the same in wall time, and "syscalls N" per
 * repetition.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Both ends of one loopback TCP connection; negative errno. */
static int tcp_pair(int fd[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int one = 1, l, ret = 0;

	fd[0] = fd[1] = -1;
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0)
		return -errno;
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(l, (struct sockaddr *)&a, &len) || listen(l, 1)) {
		ret = -errno;
		goto cleanup;
	}
	fd[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (fd[0] < 0 || connect(fd[0], (struct sockaddr *)&a, sizeof(a))) {
		ret = -errno;
		goto cleanup;
	}
	fd[1] = accept(l, NULL, NULL);
	if (fd[1] < 0) {
		ret = -errno;
		goto cleanup;
	}
	/* one segment per byte, at once: the syscalls are what is measured */
	setsockopt(fd[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
cleanup:
	close(l);
	return ret;
}

/* One repetition; returns syscalls made, negative errno. */
static long run_zero(int in, int out, long iter)
{
	char b;

	for (long i = 0; i < iter; i++)
		if (read(in, &b, 1) != 1 || write(out, &b, 1) != 1)
			return -errno;
	return 2 * iter;
}

static long run_tcp(const int fd[2], long iter)
{
	char b = 'x';

	for (long i = 0; i < iter; i++)
		if (write(fd[0], &b, 1) != 1 || read(fd[1], &b, 1) != 1 ||
		    write(fd[1], &b, 1) != 1 || read(fd[0], &b, 1) != 1)
			return -errno;
	return 4 * iter;
}

int main(int argc, char **argv)
{
	int fd[2] = { -1, -1 }, tcp, ret = 1;
	double best = 0, best_wall = 0;
	long iter, reps, n = 0;

	if (argc != 4 || (strcmp(argv[1], "zero") && strcmp(argv[1], "tcp")) ||
	    (iter = atol(argv[2])) <= 0 || (reps = atol(argv[3])) <= 0) {
		fprintf(stderr, "usage: bench_nodetax zero|tcp ITERATIONS "
				"REPETITIONS\n");
		return 2;
	}
	tcp = !strcmp(argv[1], "tcp");
	if (tcp) {
		int err = tcp_pair(fd);

		if (err) {
			fprintf(stderr,
				"bench_nodetax: loopback TCP connection: %s\n",
				strerror(-err));
			goto cleanup;
		}
	} else {
		fd[0] = open("/dev/zero", O_RDONLY);
		fd[1] = open("/dev/null", O_WRONLY);
		if (fd[0] < 0 || fd[1] < 0) {
			perror("bench_nodetax: /dev/zero, /dev/null");
			goto cleanup;
		}
	}
	for (long r = 0; r < reps; r++) {
		double t0 = now_ns(CLOCK_THREAD_CPUTIME_ID), ns, wall;
		double w0 = now_ns(CLOCK_MONOTONIC);

		n = tcp ? run_tcp(fd, iter) : run_zero(fd[0], fd[1], iter);
		if (n < 0) {
			fprintf(stderr,
				"bench_nodetax: 1-byte I/O failed: %s\n",
				strerror((int)-n));
			goto cleanup;
		}
		wall = (now_ns(CLOCK_MONOTONIC) - w0) / n;
		ns = (now_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / n;
		if (!r || ns < best)
			best = ns;
		if (!r || wall < best_wall)
			best_wall = wall;
	}
	printf("ns_per_syscall %.2f\nwall_ns_per_syscall %.2f\nsyscalls %ld\n",
	       best, best_wall, n);
	ret = 0;
cleanup:
	if (fd[0] >= 0)
		close(fd[0]);
	if (fd[1] >= 0)
		close(fd[1]);
	return ret;
}
