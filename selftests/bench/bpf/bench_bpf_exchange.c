// SPDX-License-Identifier: Apache-2.0
/*
 * BPF cost of one proxied exchange, leg by leg, with the data path's own
 * code (the bpf/ headers through selftests/bpf/progs/parse_test.bpf.c) run by
 * BPF_PROG_TEST_RUN; times are the kernel's bpf_stats run_time_ns of each
 * run. The bytes are what the bench's wrk / nginx pair moves.
 *
 * Warm: the same exchange over and over (caches hot; the minimum is the
 * cost of the instructions). Cold: 8 MiB of data written and 512 KiB of
 * code run between runs, as a busy proxy's own work does to the caches
 * between two of its socket calls on a 2-CPU node. The gap between the two
 * is what cache misses cost; the gateway rounds of `make bench` sit near
 * the cold figures. Code-cold: only the 512 KiB of code run, so the data
 * path's instructions are fetched again but most of its data is still
 * cached: the part of the gap that the size of its hot code costs.
 *
 * Usage: bench_bpf_exchange [iterations]   (root: loads BPF, turns
 * bpf_stats on for its own runs with BPF_ENABLE_STATS)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "selftests/bpf/bpf_fixture.h"

#define LEGS 4

static const char *leg_name[LEGS + 1] = {
	"downstream request (read)", "upstream request (write)",
	"upstream response (read)",  "downstream response (writev)",
	"exchange (4 runs)",
};

static const char dreq[] =
	"GET /api/items HTTP/1.1\r\nHost: shop.example.com\r\n\r\n";
static const char ureq[] = "GET /api/items HTTP/1.1\r\nHost: be\r\n\r\n";
static const char resp_head[] =
	"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\n"
	"Date: Sun, 22 Nov 2026 23:00:00 GMT\r\n"
	"Content-Type: application/octet-stream\r\nContent-Length: 11\r\n"
	"Connection: keep-alive\r\n\r\n";
static const char body[] = "backend ok\n";

/* connection slots of the two legs: see main() */
static unsigned int down, up;
static char *dirty;
static void (*cold_code)(void);
static int prog_fd = -1;

static __u64 run_ns(void)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return 0;
	return info.run_time_ns;
}

enum { WARM, COLD, CODE_COLD };

static void evict(int how)
{
	if (how == COLD)
		memset(dirty, rand(), 8 << 20);
	cold_code();
}

/* 512 KiB of 4-byte NOPs and a RET: runs code the size of a proxy's hot path */
static int make_cold_code(void)
{
	size_t sz = 512 << 10;
	unsigned char *c = mmap(NULL, sz, PROT_READ | PROT_WRITE | PROT_EXEC,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (c == MAP_FAILED)
		return -errno;
	for (size_t k = 0; k + 4 <= sz; k += 4)
		memcpy(c + k, "\x0f\x1f\x40\x00", 4);
	c[sz - 4] = 0xc3;
	cold_code = (void (*)(void))c;
	return 0;
}

struct acc {
	__u64 sum[LEGS + 1];
	__u64 min[LEGS + 1];
};

static void note(struct acc *a, int leg, __u64 d)
{
	a->sum[leg] += d;
	if (!a->min[leg] || d < a->min[leg])
		a->min[leg] = d;
}

/* One exchange; every leg timed alone. Returns 0 or a negative errno. */
static int exchange(struct acc *a, int cold, const char *resp, size_t rlen)
{
	struct iovec v[2] = {
		{ (void *)resp, rlen },
		{ (void *)body, sizeof(body) - 1 },
	};
	char both[2048];
	__u64 t0, t1, total = 0;
	int err = 0;

	memcpy(both, resp, rlen);
	memcpy(both + rlen, body, sizeof(body) - 1);
	for (int leg = 0; leg < LEGS && !err; leg++) {
		if (cold != WARM)
			evict(cold);
		t0 = run_ns();
		switch (leg) {
		case 0:
			err = fx_buf(down, 1, dreq, sizeof(dreq) - 1);
			break;
		case 1:
			err = fx_buf(up, 0, ureq, sizeof(ureq) - 1);
			break;
		case 2:
			err = fx_buf(up, 1, both, rlen + sizeof(body) - 1);
			break;
		case 3:
			err = fx_iov(down, 0, v, 2, rlen + sizeof(body) - 1);
			break;
		}
		t1 = run_ns();
		note(a, leg, t1 - t0);
		total += t1 - t0;
	}
	note(a, LEGS, total);
	return err;
}

static int round_of(struct acc *a, int n, int cold, const char *resp,
		    size_t rlen)
{
	int err;

	memset(a, 0, sizeof(*a));
	for (int i = 0; i < n; i++) {
		err = exchange(a, cold, resp, rlen);
		if (err)
			return err;
		if ((i & 127) == 127)
			fx_drain();
	}
	fx_drain();
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000, err, stats_fd;
	struct acc warm, cold, code_cold, pad;
	char padded[2048];
	size_t plen;

	if (n < 100) {
		fprintf(stderr,
			"usage: bench_bpf_exchange [iterations >= 100]\n");
		return 2;
	}
	dirty = malloc(8 << 20);
	err = dirty ? make_cold_code() : -ENOMEM;
	if (!err)
		err = fx_reset();
	/*
	 * The socket storage puts a connection's state 8 bytes into a cache
	 * line (bpf_local_storage_elem's data at 72 of a 512-byte object):
	 * slots placed likewise touch the lines the agent's runs touch.
	 */
	if (!err) {
		int d = fx_slot_at(8, 0), u = fx_slot_at(8, 1);

		down = d < 0 ? 0 : d;
		up = u < 0 ? 1 : u;
		if (d < 0 || u < 0)
			fprintf(stderr,
				"bench_bpf_exchange: no two slots placed as the socket storage's: slots 0 and 1\n");
		err = fx_open(down, MM_ROLE_DOWN) ?: fx_open(up, MM_ROLE_UP);
	}
	prog_fd = err ? -1 : fx_io_prog_fd();
	if (err || prog_fd < 0) {
		fprintf(stderr,
			"bench_bpf_exchange: setup failed (%s): run as root\n",
			strerror(-(err ?: prog_fd)));
		return 1;
	}
	/* run-time stats while this fd is open, whatever the sysctl says */
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0) {
		fprintf(stderr,
			"bench_bpf_exchange: cannot enable bpf_stats: %s\n",
			strerror(errno));
		return 1;
	}
	/* the same head with 400 more bytes in one header the parser skips */
	plen = snprintf(padded, sizeof(padded), "%.*sX-Pad: %0400d\r\n\r\n",
			(int)(sizeof(resp_head) - 3), resp_head, 0);
	err = round_of(&warm, n, WARM, resp_head, sizeof(resp_head) - 1) ?:
	      round_of(&pad, n, WARM, padded, plen) ?:
	      round_of(&code_cold, n / 4, CODE_COLD, resp_head,
		       sizeof(resp_head) - 1) ?:
	      round_of(&cold, n / 10, COLD, resp_head, sizeof(resp_head) - 1);
	close(stats_fd);
	if (err) {
		fprintf(stderr, "bench_bpf_exchange: a run failed: %s\n",
			strerror(-err));
		return 1;
	}
	printf("%-30s %9s %9s %9s %9s\n", "BPF ns per run (harness)",
	       "warm min", "warm mean", "code-cold", "cold mean");
	for (int leg = 0; leg <= LEGS; leg++)
		printf("  %-28s %9llu %9llu %9llu %9llu\n", leg_name[leg],
		       (unsigned long long)warm.min[leg],
		       (unsigned long long)(warm.sum[leg] / n),
		       (unsigned long long)(code_cold.sum[leg] / (n / 4)),
		       (unsigned long long)(cold.sum[leg] / (n / 10)));
	printf("  %-28s %9.2f\n", "ns per skipped head byte",
	       ((double)pad.min[2] - warm.min[2]) / 400.0);
	return 0;
}
