// SPDX-License-Identifier: Apache-2.0
/*
 * Loads one level of selftests/bench/bpf/floor.bpf.c (empty, hook, read, copy)
 * for the proxy processes given, drains the copy level's records every
 * 10 ms without wakeups (as the agent drains its own), until SIGINT or
 * SIGTERM. make bench runs it in place of the agent to measure what the
 * attach point, a per-socket state, reading each I/O's first bytes and a
 * prefix copy cost the gateway.
 *
 * Usage: bench_floor empty|hook|read|copy PID...   (root)
 *        bench_floor skb CGROUP2_DIR   (the gateway's processes in it)
 * Prints "ready" once attached; at exit "records N bytes B dropped D".
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "floor.skel.h"

static volatile sig_atomic_t stop;
static unsigned long long records, bytes;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int on_record(void *ctx, void *data, size_t len)
{
	(void)ctx;
	(void)data;
	records++;
	bytes += len;
	return 0;
}

static int level_of(const char *s)
{
	static const char *const names[] = { "empty", "hook", "read", "copy",
					     "skb" };

	for (int i = 0; i < 5; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

static int set_target(int map_fd, long pid)
{
	__u32 w = (__u32)pid / 64;
	__u64 bits = 0;

	if (bpf_map_lookup_elem(map_fd, &w, &bits))
		return -errno;
	bits |= 1ULL << (pid & 63);
	return bpf_map_update_elem(map_fd, &w, &bits, BPF_ANY) ? -errno : 0;
}

static unsigned long long dropped(struct floor_bpf *skel)
{
	int ncpu = libbpf_num_possible_cpus(), fd;
	unsigned long long sum = 0;
	__u64 *v;
	__u32 zero = 0;

	if (ncpu <= 0)
		return 0;
	v = calloc(ncpu, sizeof(*v));
	fd = bpf_map__fd(skel->maps.fl_dropped);
	if (v && !bpf_map_lookup_elem(fd, &zero, v))
		for (int i = 0; i < ncpu; i++)
			sum += v[i];
	free(v);
	return sum;
}

int main(int argc, char **argv)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	struct ring_buffer *rb = NULL;
	struct floor_bpf *skel = NULL;
	struct bpf_link *in = NULL, *out = NULL;
	int level, err = 1, cg = -1;

	if (argc < 3 || (level = level_of(argv[1])) < 0) {
		fprintf(stderr,
			"usage: %s empty|hook|read|copy PID...\n"
			"       %s skb CGROUP2_DIR\n",
			argv[0], argv[0]);
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	skel = floor_bpf__open();
	if (!skel) {
		fprintf(stderr, "bench_floor: cannot open the BPF object: %s\n",
			strerror(errno));
		return 1;
	}
	skel->rodata->fl_level = level;
	/* the socket tracepoints or the cgroup's packets, not both */
	bpf_program__set_autoload(skel->progs.fl_sock_recv, level != 4);
	bpf_program__set_autoload(skel->progs.fl_sock_send, level != 4);
	bpf_program__set_autoload(skel->progs.fl_skb_in, level == 4);
	bpf_program__set_autoload(skel->progs.fl_skb_out, level == 4);
	if (floor_bpf__load(skel)) {
		fprintf(stderr,
			"bench_floor: cannot load the BPF object "
			"(needs root and a 6.3+ kernel): %s\n",
			strerror(errno));
		goto cleanup;
	}
	if (level == 4) {
		cg = open(argv[2], O_RDONLY | O_DIRECTORY);
		if (cg < 0) {
			fprintf(stderr,
				"bench_floor: cannot open the cgroup %s: "
				"%s (give a cgroup v2 directory)\n",
				argv[2], strerror(errno));
			goto cleanup;
		}
		in = bpf_program__attach_cgroup(skel->progs.fl_skb_in, cg);
		out = bpf_program__attach_cgroup(skel->progs.fl_skb_out, cg);
		if (!in || !out) {
			fprintf(stderr,
				"bench_floor: cannot attach to the cgroup "
				"%s: %s\n",
				argv[2], strerror(errno));
			goto cleanup;
		}
	}
	for (int i = 2; level != 4 && i < argc; i++) {
		char *end;
		long pid = strtol(argv[i], &end, 10);

		if (*end || pid <= 0 || pid >= 64L * 65536) {
			fprintf(stderr, "bench_floor: not a PID: %s\n",
				argv[i]);
			goto cleanup;
		}
		if (set_target(bpf_map__fd(skel->maps.fl_target_bits), pid)) {
			fprintf(stderr, "bench_floor: cannot set PID %ld\n",
				pid);
			goto cleanup;
		}
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.fl_records), on_record,
			      NULL, NULL);
	if (!rb || (level != 4 && floor_bpf__attach(skel))) {
		fprintf(stderr, "bench_floor: cannot attach: %s\n",
			strerror(errno));
		goto cleanup;
	}
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		nanosleep(&tick, NULL);
		ring_buffer__consume(rb);
	}
	ring_buffer__consume(rb);
	printf("records %llu bytes %llu dropped %llu\n", records, bytes,
	       dropped(skel));
	err = 0;
cleanup:
	bpf_link__destroy(in);
	bpf_link__destroy(out);
	if (cg >= 0)
		close(cg);
	ring_buffer__free(rb);
	floor_bpf__destroy(skel);
	return err;
}
