// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/node/mem_limit.h"
#include "agent/config/options.h"
#include "policy/util/log.h"

/*
 * The budget model. Everything the caps govern is charged to the agent's
 * memory cgroup: heap (series, queue) and, since Linux 5.11, BPF maps and
 * the ring buffer (memcg-based accounting of BPF memory).
 *   BASE_BYTES      the floor without traffic: binary, libcurl/OpenSSL,
 *                   libbpf, policy engine, thread stacks touched
 *   HEADROOM        a quarter of the limit stays free for allocator
 *                   fragmentation, page cache and socket buffers charged to
 *                   the cgroup
 *   conn_bytes      one connection's HTTP state as the kernel allocates
 *                   it (mem_limit__conn_bytes() of the mm_conns sizes the
 *                   loader reads from the BPF object), allocated on use; the
 *                   cap bounds mm_conns (sys_exit fallback mode), while in
 *                   socket mode the state lives in sk storage, freed with
 *                   the socket, and the budget share is headroom for it
 *   SERIES_BYTES    one series with HTTP labels: measured (make unit,
 *                   test_mstore_memory) 123 B for a counter, 270-430 B for
 *                   an explicit histogram, 1503 B for an exponential one
 *                   spread over 160 buckets; 2 KiB covers the worst
 *   METRICS_HINT    metrics expected to reach the per-metric cap at once
 * The rest is split 1/8 ring buffer with the user-space queue that takes
 * its records (OPT_EVENT_QUEUE_PER_RING ring buffers' worth, used only while the
 * event loop is busy), 3/8 connections, 3/8 series, 1/8 export queue.
 */
#define BASE_BYTES (24ULL << 20)
/*
 * Loading is the peak, not steady state: the verifier's state memory is
 * charged to the loading task's cgroup. Measured by test_mem_limit.sh on
 * kernel 6.18: 100 MiB peak (84 MiB of it kernel) for the socket-tracepoint
 * programs (153 MiB for the earlier sys_exit-only set), 19 MiB after load.
 * Below that the agent is OOM-killed before it runs, whatever the caps;
 * MIN_LIMIT_BYTES adds half again for other kernels' verifiers.
 */
#define LOAD_PEAK_BYTES (100ULL << 20)
#define MIN_LIMIT_BYTES (LOAD_PEAK_BYTES + LOAD_PEAK_BYTES / 2)
#define SERIES_BYTES    2048ULL
#define METRICS_HINT    8ULL
/* floors: below these the agent is not useful; validate() needs >= 64 */
#define MIN_CONNS   64U
#define MIN_RINGBUF (64U << 10)
#define MIN_SERIES  16U
#define MIN_QUEUE   (64U << 10)
/* v1 reports "no limit" as PAGE_COUNTER_MAX pages, a value near 2^63 */
#define V1_UNLIMITED (1ULL << 60)

int mem_limit__parse_proc_cgroup(const char *text, char *v2, size_t v2len,
				 char *v1, size_t v1len)
{
	const char *line = text;

	v2[0] = v1[0] = '\0';
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *c1 = memchr(line, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (c1 + 1 - line))
				    : NULL;

		if (c2) {
			const char *ctl = c1 + 1;
			size_t ctl_len = (size_t)(c2 - ctl);
			size_t plen = len - (size_t)(c2 + 1 - line);
			char *dst = NULL;
			size_t dlen = 0;

			if (ctl_len == 0 && c1 - line == 1 && line[0] == '0') {
				dst = v2, dlen = v2len;
			} else {
				/* "memory" as one of a comma-separated list */
				const char *p = ctl;

				while (p < c2) {
					const char *e = memchr(
						p, ',', (size_t)(c2 - p));

					if (!e)
						e = c2;
					if (e - p == 6 &&
					    !memcmp(p, "memory", 6)) {
						dst = v1, dlen = v1len;
						break;
					}
					p = e + 1;
				}
			}
			if (dst) {
				if (plen + 1 > dlen)
					return -ENAMETOOLONG;
				memcpy(dst, c2 + 1, plen);
				dst[plen] = '\0';
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

/* A limit file's value: 0 for "max", unreadable or unlimited. */
static uint64_t read_limit(const char *dir, const char *file)
{
	char path[1024], buf[64];
	unsigned long long v;
	FILE *f;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    sizeof(path))
		return 0;
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return 0;
	}
	fclose(f);
	if (!strncmp(buf, "max", 3) || sscanf(buf, "%llu", &v) != 1)
		return 0;
	return v >= V1_UNLIMITED ? 0 : v;
}

/* The smallest limit on path and its ancestors below root. */
static uint64_t walk_up(const char *root, const char *path, const char *file,
			char *at, size_t atlen)
{
	char dir[512];
	uint64_t best = 0;
	size_t rl = strlen(root);
	char *slash;

	if ((size_t)snprintf(dir, sizeof(dir), "%s%s", root, path) >=
	    sizeof(dir))
		return 0;
	/* trailing "/" of a root path ("0::/") */
	while (strlen(dir) > rl && dir[strlen(dir) - 1] == '/')
		dir[strlen(dir) - 1] = '\0';
	for (;;) {
		uint64_t v = read_limit(dir, file);

		if (v && (!best || v < best)) {
			best = v;
			snprintf(at, atlen, "%s", dir);
		}
		slash = strrchr(dir, '/');
		if (strlen(dir) <= rl || !slash || (size_t)(slash - dir) < rl)
			break;
		*slash = '\0';
	}
	return best;
}

int mem_limit__read(const char *v2_root, const char *v2_path,
		    const char *v1_root, const char *v1_path,
		    struct mem_limit *out)
{
	uint64_t v;

	memset(out, 0, sizeof(*out));
	if (v2_root && v2_path && v2_path[0] == '/') {
		v = walk_up(v2_root, v2_path, "memory.max", out->dir,
			    sizeof(out->dir));
		if (v) {
			out->bytes = v;
			out->source = MEM_LIMIT_V2;
			return 0;
		}
	}
	if (v1_root && v1_path && v1_path[0] == '/') {
		v = walk_up(v1_root, v1_path, "memory.limit_in_bytes", out->dir,
			    sizeof(out->dir));
		if (v) {
			out->bytes = v;
			out->source = MEM_LIMIT_V1;
			return 0;
		}
	}
	out->dir[0] = '\0';
	return 0;
}

/* The kmalloc size class an object of n bytes comes from (SLUB). */
static uint64_t kmalloc_class(uint64_t n)
{
	static const uint32_t cls[] = { 8,   16,  32,   64,   96,   128, 192,
					256, 512, 1024, 2048, 4096, 8192 };

	for (size_t i = 0; i < sizeof(cls) / sizeof(cls[0]); i++)
		if (n <= cls[i])
			return cls[i];
	return (n + 4095) & ~4095ULL;
}

#define ROUND8(n) (((uint64_t)(n) + 7) & ~7ULL)
/*
 * Linux 6.x: struct htab_elem is 48 bytes before its key (hash node,
 * lru/pptr union, hash); a BPF_F_NO_PREALLOC element comes from
 * bpf_mem_alloc, which puts an 8-byte llist node before it; each of the
 * roundup_pow_of_two(max_entries) buckets is 16 bytes, up to two per entry.
 * Socket storage (the other capture mode) has a 72-byte element header, and
 * a socket's first storage brings its struct bpf_local_storage (176 bytes):
 * 512 + 192 for a 424-byte mm_conn, the 722 B per tracked connection make
 * bench measures in the memory cgroup (docs/performance.md).
 */
#define HTAB_ELEM_HDR          48
#define MEM_ALLOC_HDR          8
#define HTAB_BUCKETS_PER_ENTRY 32
#define SK_STORAGE_HDR         72
#define SK_STORAGE_OWNER       176

uint32_t mem_limit__conn_bytes(uint32_t key_size, uint32_t value_size)
{
	uint64_t htab = kmalloc_class(HTAB_ELEM_HDR + ROUND8(key_size) +
				      ROUND8(value_size) + MEM_ALLOC_HDR) +
			HTAB_BUCKETS_PER_ENTRY;
	uint64_t sk = kmalloc_class(SK_STORAGE_HDR + ROUND8(value_size) +
				    MEM_ALLOC_HDR) +
		      kmalloc_class(SK_STORAGE_OWNER + MEM_ALLOC_HDR);

	return (uint32_t)(htab > sk ? htab : sk);
}

static uint32_t lower(uint32_t cur, uint64_t fit, uint32_t floor)
{
	if (fit < floor)
		fit = floor;
	return fit < cur ? (uint32_t)fit : cur;
}

static uint32_t pow2_floor(uint64_t v)
{
	uint32_t p = 1;

	while ((uint64_t)p * 2 <= v && p < (1U << 31))
		p *= 2;
	return p;
}

uint64_t mem_limit__derive_caps(uint64_t limit_bytes, struct mem_caps *caps)
{
	uint64_t usable, budget;
	uint64_t conn_bytes = caps->conn_bytes ? caps->conn_bytes
					       : mem_limit__conn_bytes(8, 0);

	if (!limit_bytes)
		return 0;
	usable = limit_bytes - limit_bytes / 4;
	budget = usable > BASE_BYTES ? usable - BASE_BYTES : 0;
	caps->ringbuf_bytes =
		lower(caps->ringbuf_bytes,
		      pow2_floor(budget / 8 / (1 + OPT_EVENT_QUEUE_PER_RING)),
		      MIN_RINGBUF);
	caps->max_connections = lower(caps->max_connections,
				      budget * 3 / 8 / conn_bytes, MIN_CONNS);
	caps->max_series = lower(caps->max_series,
				 budget * 3 / 8 / (SERIES_BYTES * METRICS_HINT),
				 MIN_SERIES);
	caps->otlp_queue_bytes =
		lower(caps->otlp_queue_bytes, budget / 8, MIN_QUEUE);
	return budget;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;

	if (!f)
		return NULL;
	/* /proc/self/cgroup: one line per hierarchy, well under 8 KiB */
	buf = malloc(8192);
	if (buf)
		buf[fread(buf, 1, 8191, f)] = '\0';
	fclose(f);
	return buf;
}

int mem_limit__apply(struct agent_opts *o, uint32_t conn_bytes,
		     struct mem_limit *out)
{
	static const char *const v2_roots[] = { "/sys/fs/cgroup",
						"/sys/fs/cgroup/unified" };
	char v2[512], v1[512];
	struct mem_limit ml = {};
	struct mem_caps caps = {
		.max_connections = o->max_connections,
		.ringbuf_bytes = o->ringbuf_bytes,
		.max_series = o->max_series,
		.otlp_queue_bytes = o->otlp_queue_bytes,
		.conn_bytes = conn_bytes,
	};
	char *text = slurp("/proc/self/cgroup");
	uint64_t budget;

	if (text && !mem_limit__parse_proc_cgroup(text, v2, sizeof(v2), v1,
						  sizeof(v1))) {
		/* memory.max exists only where a cgroup2 hierarchy is mounted */
		for (size_t i = 0; i < 2 && !ml.bytes; i++)
			mem_limit__read(v2_roots[i], v2,
					"/sys/fs/cgroup/memory", v1, &ml);
	}
	free(text);
	if (out)
		*out = ml;
	budget = mem_limit__derive_caps(ml.bytes, &caps);
	if (ml.bytes && ml.bytes < MIN_LIMIT_BYTES)
		pr_warn("memory limit %" PRIu64
			" MiB (%s) is below what loading the BPF programs "
			"takes (about %llu MiB charged to this cgroup by the verifier): the agent may be "
			"OOM-killed while starting; give the pod a memory limit of at least %lluMi\n",
			ml.bytes >> 20, ml.dir, LOAD_PEAK_BYTES >> 20,
			MIN_LIMIT_BYTES >> 20);
	if (caps.max_connections != o->max_connections ||
	    caps.ringbuf_bytes != o->ringbuf_bytes ||
	    caps.max_series != o->max_series ||
	    caps.otlp_queue_bytes != o->otlp_queue_bytes) {
		pr_info("memory limit %" PRIu64
			" MiB (%s): caps lowered to fit %" PRIu64
			" MiB: maxConnections %u -> %u, ringbufBytes %u -> %u, maxSeries %u -> %u, "
			"otlp.queueBytes %u -> %u (raise the pod's memory limit to keep the configured caps)\n",
			ml.bytes >> 20, ml.dir, budget >> 20,
			o->max_connections, caps.max_connections,
			o->ringbuf_bytes, caps.ringbuf_bytes, o->max_series,
			caps.max_series, o->otlp_queue_bytes,
			caps.otlp_queue_bytes);
		o->max_connections = caps.max_connections;
		o->ringbuf_bytes = caps.ringbuf_bytes;
		o->max_series = caps.max_series;
		o->otlp_queue_bytes = caps.otlp_queue_bytes;
	}
	return 0;
}
