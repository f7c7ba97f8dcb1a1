// SPDX-License-Identifier: Apache-2.0
/*
 * The agent's memory limit: /proc/self/cgroup text as the kernel writes it
 * (v2 only, v1 hybrid, a cgroup namespace root), fixture
 * trees with memory.max / memory.limit_in_bytes at several levels, and the
 * caps derived from a limit.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/config/options.h"
#include "agent/node/mem_limit.h"
#include "selftests/unit/test.h"

static void put(const char *root, const char *rel, const char *file,
		const char *val)
{
	char path[1024];
	char *p;
	FILE *f;

	snprintf(path, sizeof(path), "%s%s/", root, rel);
	for (p = path + strlen(root) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	strncat(path, file, sizeof(path) - strlen(path) - 1);
	f = fopen(path, "w");
	if (f) {
		fputs(val, f);
		fclose(f);
	}
}

TEST(mem_limit_parse_proc_cgroup)
{
	char v2[256], v1[256];

	/* pure v2 node */
	ASSERT_EQ(
		mem_limit__parse_proc_cgroup(
			"0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-ab.scope\n",
			v2, sizeof(v2), v1, sizeof(v1)),
		0);
	ASSERT_STREQ(
		v2,
		"/kubepods.slice/kubepods-pod1.slice/cri-containerd-ab.scope");
	ASSERT_STREQ(v1, "");
	/* hybrid, as /proc/self/cgroup reads on a hybrid host; joint controllers */
	ASSERT_EQ(mem_limit__parse_proc_cgroup(
			  "12:pids:/user.slice\n"
			  "9:cpu,cpuacct:/x\n"
			  "5:blkio,memory:/kubepods/burstable/podU/c1\n"
			  "1:name=systemd:/user.slice/session-1.scope\n"
			  "0::/user.slice/session-1.scope\n",
			  v2, sizeof(v2), v1, sizeof(v1)),
		  0);
	ASSERT_STREQ(v2, "/user.slice/session-1.scope");
	ASSERT_STREQ(v1, "/kubepods/burstable/podU/c1");
	/* a controller whose name only contains "memory" is not it */
	ASSERT_EQ(mem_limit__parse_proc_cgroup("3:memoryx:/a\n0::/\n", v2,
					       sizeof(v2), v1, sizeof(v1)),
		  0);
	ASSERT_STREQ(v1, "");
	ASSERT_STREQ(v2, "/");
	/* no trailing newline */
	ASSERT_EQ(mem_limit__parse_proc_cgroup("0::/a/b", v2, sizeof(v2), v1,
					       sizeof(v1)),
		  0);
	ASSERT_STREQ(v2, "/a/b");
	ASSERT_EQ(mem_limit__parse_proc_cgroup("0::/aaaaaaaaaaaaaaaaaaaa", v2,
					       8, v1, sizeof(v1)),
		  -ENAMETOOLONG);
}

TEST(mem_limit_read_v2_smallest_ancestor)
{
	char root[512];
	struct mem_limit ml;

	snprintf(root, sizeof(root), "%s/v2", test__tmpdir());
	mkdir(root, 0755);
	put(root, "", "memory.max", "max\n"); /* the root has none; "max" */
	put(root, "/kubepods.slice", "memory.max", "8000000000\n");
	put(root, "/kubepods.slice/pod.slice", "memory.max", "268435456\n");
	put(root, "/kubepods.slice/pod.slice/c.scope", "memory.max", "max\n");
	ASSERT_EQ(mem_limit__read(root, "/kubepods.slice/pod.slice/c.scope",
				  NULL, NULL, &ml),
		  0);
	ASSERT_EQ(ml.bytes, 268435456);
	ASSERT_EQ(ml.source, MEM_LIMIT_V2);
	ASSERT_TRUE(strstr(ml.dir, "/kubepods.slice/pod.slice") != NULL, "%s",
		    ml.dir);
	/* the container's own limit below the pod's wins */
	put(root, "/kubepods.slice/pod.slice/c.scope", "memory.max",
	    "67108864\n");
	ASSERT_EQ(mem_limit__read(root, "/kubepods.slice/pod.slice/c.scope",
				  NULL, NULL, &ml),
		  0);
	ASSERT_EQ(ml.bytes, 67108864);
	/* in a cgroup namespace the path is "/" and the mount is the cgroup */
	put(root, "", "memory.max", "33554432\n");
	ASSERT_EQ(mem_limit__read(root, "/", NULL, NULL, &ml), 0);
	ASSERT_EQ(ml.bytes, 33554432);
}

TEST(mem_limit_read_v1_and_none)
{
	char v1root[512], v2root[512];
	struct mem_limit ml;

	snprintf(v1root, sizeof(v1root), "%s/v1mem", test__tmpdir());
	snprintf(v2root, sizeof(v2root), "%s/v2none", test__tmpdir());
	mkdir(v1root, 0755);
	mkdir(v2root, 0755);
	/* v1 says "unlimited" with PAGE_COUNTER_MAX pages */
	put(v1root, "", "memory.limit_in_bytes", "9223372036854771712\n");
	put(v1root, "/kubepods/burstable/podU", "memory.limit_in_bytes",
	    "134217728\n");
	put(v1root, "/kubepods/burstable/podU/c1", "memory.limit_in_bytes",
	    "9223372036854771712\n");
	put(v2root, "/user.slice", "memory.max", "max\n");
	ASSERT_EQ(mem_limit__read(v2root, "/user.slice", v1root,
				  "/kubepods/burstable/podU/c1", &ml),
		  0);
	ASSERT_EQ(ml.bytes, 134217728);
	ASSERT_EQ(ml.source, MEM_LIMIT_V1);
	/* no limit anywhere */
	ASSERT_EQ(mem_limit__read(v2root, "/user.slice", v1root, "/", &ml), 0);
	ASSERT_EQ(ml.bytes, 0);
	ASSERT_EQ(ml.source, MEM_LIMIT_NONE);
	/* no hierarchy mounted at all */
	ASSERT_EQ(mem_limit__read(NULL, NULL, NULL, NULL, &ml), 0);
	ASSERT_EQ(ml.bytes, 0);
}

TEST(mem_limit_derive_caps)
{
	const struct mem_caps defaults = {
		.max_connections = 16384,
		.ringbuf_bytes = 4 << 20,
		.max_series = 10000,
		.otlp_queue_bytes = 8 << 20,
		.conn_bytes = 704,
	};
	struct mem_caps c;
	uint64_t budget, used;

	/* no limit: unchanged */
	c = defaults;
	ASSERT_EQ(mem_limit__derive_caps(0, &c), 0);
	ASSERT_EQ(memcmp(&c, &defaults, sizeof(c)), 0);
	/* 1 GiB fits every default at its worst case (full histograms) */
	c = defaults;
	mem_limit__derive_caps(1ULL << 30, &c);
	ASSERT_EQ(memcmp(&c, &defaults, sizeof(c)), 0);
	/* the DaemonSet's 512Mi: only the series cap comes down (8 metrics of
	 * 10000 full exponential histograms would not fit) */
	c = defaults;
	mem_limit__derive_caps(512ULL << 20, &c);
	ASSERT_EQ(c.max_connections, defaults.max_connections);
	ASSERT_EQ(c.ringbuf_bytes, defaults.ringbuf_bytes);
	ASSERT_EQ(c.otlp_queue_bytes, defaults.otlp_queue_bytes);
	ASSERT_TRUE(c.max_series < defaults.max_series && c.max_series > 5000,
		    "max_series %u", c.max_series);
	/* 48 MiB: every cap comes down, and their worst case fits the budget */
	c = defaults;
	budget = mem_limit__derive_caps(48ULL << 20, &c);
	ASSERT_TRUE(budget > 0 && budget < (48ULL << 20), "budget %llu",
		    (unsigned long long)budget);
	ASSERT_TRUE(c.max_connections < defaults.max_connections);
	ASSERT_TRUE(c.max_series < defaults.max_series);
	ASSERT_TRUE(c.otlp_queue_bytes < defaults.otlp_queue_bytes);
	ASSERT_TRUE(c.ringbuf_bytes < defaults.ringbuf_bytes);
	ASSERT_EQ(c.ringbuf_bytes & (c.ringbuf_bytes - 1), 0);
	/* the ring and the queue that takes its records */
	used = (uint64_t)c.max_connections * c.conn_bytes +
	       (uint64_t)c.ringbuf_bytes * (1 + OPT_EVENT_QUEUE_PER_RING) +
	       (uint64_t)c.max_series * 2048 * 8 + c.otlp_queue_bytes;
	ASSERT_TRUE(used <= budget, "used %llu > budget %llu",
		    (unsigned long long)used, (unsigned long long)budget);
	/* caps only go down: a user's smaller setting stays */
	c = defaults;
	c.max_series = 100;
	mem_limit__derive_caps(64ULL << 20, &c);
	ASSERT_EQ(c.max_series, 100);
	/* absurdly small: floors the agent can still run with */
	c = defaults;
	ASSERT_EQ(mem_limit__derive_caps(16ULL << 20, &c), 0);
	ASSERT_EQ(c.max_connections, 64);
	ASSERT_EQ(c.ringbuf_bytes, 64 << 10);
	ASSERT_EQ(c.max_series, 16);
	ASSERT_EQ(c.otlp_queue_bytes, 64 << 10);
}

/*
 * One connection's cost follows the map's sizes as the kernel allocates
 * them, and the cap follows it: a 424-byte struct mm_conn (the size the
 * loaded object's BTF gives on x86_64) is one 512-byte kmalloc object in a
 * 64-bit-keyed hash (plus its buckets), or in socket storage one 512-byte
 * element plus the socket's 192-byte storage owner: under 1 KiB, where the
 * caps once charged 3.5 KiB.
 */
TEST(mem_limit_conn_cap)
{
	struct mem_caps c = {
		.max_connections = 1 << 20,
		.ringbuf_bytes = 4 << 20,
		.max_series = 10000,
		.otlp_queue_bytes = 8 << 20,
	};
	uint64_t budget;

	/* sk storage: 72 + 424 + 8 = 504 (kmalloc-512) + 176 + 8 (kmalloc-192);
	 * hash: 48 + 8 + 424 + 8 = 488 (kmalloc-512) + 32 of buckets */
	ASSERT_EQ(mem_limit__conn_bytes(8, 424), 512 + 192);
	/* the largest mm_conn its _Static_assert admits still fits */
	ASSERT_EQ(mem_limit__conn_bytes(8, 432), 512 + 192);
	/* past it, the next size class */
	ASSERT_EQ(mem_limit__conn_bytes(8, 449), 1024 + 192);
	/* page-sized values: both maps round to pages */
	ASSERT_EQ(mem_limit__conn_bytes(8, 8000), 8192 + 192);
	ASSERT_EQ(mem_limit__conn_bytes(8, 9000), 12288 + 192);
	/* a hash element bigger than the socket's storage: the hash's cost */
	ASSERT_EQ(mem_limit__conn_bytes(64, 424), 1024 + 32);

	c.conn_bytes = mem_limit__conn_bytes(8, 424);
	budget = mem_limit__derive_caps(96ULL << 20, &c);
	ASSERT_EQ(c.max_connections, budget * 3 / 8 / (512 + 192));
	/* 96 MiB: 48 MiB budget, 18 MiB of it for connections */
	ASSERT_TRUE(c.max_connections > 26000, "max_connections %u",
		    c.max_connections);
	/* the default 16384 is not lowered under a 96 MiB limit */
	c.max_connections = 16384;
	mem_limit__derive_caps(96ULL << 20, &c);
	ASSERT_EQ(c.max_connections, 16384);
}
