// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * bpf/capture.bpf.h and the headers it includes, unchanged, compiled as
 * x86_64 user-space C against the same vmlinux.h the BPF object uses (so
 * struct iovec, user_msghdr, tcp_sock and the BPF_* constants are the
 * kernel's; BPF_NO_PRESERVE_ACCESS_INDEX drops the BPF-only CO-RE attribute)
 * with bpf_shim/ standing in for libbpf's helper headers. This file must not
 * include libc headers: vmlinux.h redefines their types. It emulates what
 * the helpers do in the kernel closely enough to keep the verifier's
 * guarantees checkable: bpf_probe_read_user fails (and zero-fills, as the
 * kernel does) outside the memory the syscall handed over, and counts it.
 */
#define BPF_NO_PRESERVE_ACCESS_INDEX
/* off for the byte-by-byte run: the byte path is the word paths' oracle */
int fzb_word_paths = 1;
#define MM_WORD_PATHS() fzb_word_paths
int fzb_route_accs_full;
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "bpf/milometer.h"
#include "bpf/conn.bpf.h"
#include "bpf/maps.bpf.h"
#include "bpf/http_parse.bpf.h"
#include "bpf/route_lookup.bpf.h"
#include "bpf/exchange.bpf.h"
/* no socket here: a held upstream response is dropped at its next I/O */
#define MM_SK_WRITE_SEQ(s) 0
#include "bpf/capture.bpf.h"

#include "selftests/fuzz/bpf_parser_glue.h"

#define EFAULT_   14
#define E2BIG_    7
#define TABLE_MAX 32

void abort(void);
void *memcpy(void *d, const void *s, unsigned long n);
void *memset(void *d, int c, unsigned long n);
int memcmp(const void *a, const void *b, unsigned long n);

/* Memory regions of the current "syscall" (user buffer, iovec array). */
static struct {
	__u64 lo, hi;
} regions[4];
static int nregions;
static __u64 bad_reads;

static struct mm_conn conn;
/* mm_conn_exts: one connection here, so one entry at most */
static struct mm_conn_ext conn_ext, conn_ext_zero;
static __u64 conn_ext_key;
static bool conn_ext_live;
/* mm_route_accs: likewise */
static struct mm_route_acc route_acc;
static __u64 route_acc_key;
static bool route_acc_live;
static __u64 stats[MM_STAT__COUNT];
static __u64 conn_ids;
static struct mm_scratch scratch;
static struct mm_config cfg_map;
static __u64 target_bits[MM_TARGET_WORDS];
static struct mm_link fz_thread_link;
static bool fz_thread_link_live;
static struct task_struct *const current_task =
	(struct task_struct *)&fz_thread_link;
static __u64 clock_ns;

struct kv {
	char key[24] __attribute__((aligned(8)));
	char val[sizeof(struct mm_route_cands)] __attribute__((aligned(8)));
	bool live;
};
static struct kv vhosts[TABLE_MAX], routes[TABLE_MAX];
static unsigned int kv_next;
/* direct-mapped arrays (per-CPU ones have one CPU here) */
static struct mm_recent_slot recent[MM_RECENT_SLOTS];
static struct mm_route_memo route_cache[MM_ROUTE_CACHE_SLOTS];

static struct fzb_event events[FZB_EVENTS_MAX];
static int nevents;
static char rb_slot[sizeof(struct fzb_event)];
static bool rb_reserved;

static struct kv *table_of(void *map, __u32 *ksz, __u32 *vsz)
{
	if (map == &mm_vhosts) {
		*ksz = sizeof(struct mm_vhost_key);
		*vsz = sizeof(struct mm_vhost_val);
		return vhosts;
	}
	if (map == &mm_routes) {
		*ksz = sizeof(struct mm_route_key);
		*vsz = sizeof(struct mm_route_cands);
		return routes;
	}
	return NULL;
}

static void *bpf_map_lookup_elem(void *map, const void *key)
{
	__u32 k = *(const __u32 *)key, ksz, vsz;
	struct kv *t;

	if (map == &mm_stats)
		return k < MM_STAT__COUNT ? &stats[k] : NULL;
	if (map == &mm_conn_ids)
		return k ? NULL : &conn_ids;
	if (map == &mm_scratch)
		return k ? NULL : &scratch;
	if (map == &mm_config)
		return k ? NULL : &cfg_map;
	if (map == &mm_target_bits)
		return k < MM_TARGET_WORDS ? &target_bits[k] : NULL;
	if (map == &mm_recent)
		return k < MM_RECENT_SLOTS ? &recent[k] : NULL;
	if (map == &mm_route_cache)
		return k < MM_ROUTE_CACHE_SLOTS ? &route_cache[k] : NULL;
	if (map == &mm_conn_ext_zero)
		return k ? NULL : &conn_ext_zero;
	if (map == &mm_conn_exts)
		return conn_ext_live && conn_ext_key == *(const __u64 *)key
			       ? &conn_ext
			       : NULL;
	if (map == &mm_route_accs)
		return route_acc_live && route_acc_key == *(const __u64 *)key
			       ? &route_acc
			       : NULL;
	t = table_of(map, &ksz, &vsz);
	if (!t)
		abort(); /* a map the emulation does not know: teach it */
	for (int i = 0; i < TABLE_MAX; i++)
		if (t[i].live && !memcmp(t[i].key, key, ksz))
			return t[i].val;
	return NULL;
}

static long bpf_map_update_elem(void *map, const void *key, const void *value,
				__u64 flags)
{
	__u32 ksz, vsz;
	struct kv *t = table_of(map, &ksz, &vsz);
	struct kv *slot;

	if (map == &mm_conn_exts) {
		if (conn_ext_live && flags == BPF_NOEXIST)
			return -17; /* EEXIST */
		conn_ext_key = *(const __u64 *)key;
		conn_ext_live = true;
		memcpy(&conn_ext, value, sizeof(conn_ext));
		return 0;
	}
	if (map == &mm_route_accs) {
		if (route_acc_live && route_acc_key != *(const __u64 *)key)
			abort(); /* one connection here */
		if (fzb_route_accs_full && !route_acc_live)
			return -7; /* E2BIG: the hash map's "full" */
		route_acc_key = *(const __u64 *)key;
		route_acc_live = true;
		memcpy(&route_acc, value, sizeof(route_acc));
		return 0;
	}
	if (!t)
		abort();
	slot = bpf_map_lookup_elem(map, key)
		       ? (struct kv *)((char *)bpf_map_lookup_elem(map, key) -
				       __builtin_offsetof(struct kv, val))
		       : NULL;
	if (!slot) {
		/* hash stand-in: a new key takes the next slot, round robin */
		slot = &t[kv_next++ % TABLE_MAX];
		memcpy(slot->key, key, ksz);
		slot->live = true;
	}
	memcpy(slot->val, value, vsz);
	return 0;
}

static long bpf_map_delete_elem(void *map, const void *key)
{
	if (map == &mm_route_accs) {
		if (!route_acc_live || route_acc_key != *(const __u64 *)key)
			return -2; /* ENOENT */
		route_acc_live = false;
		return 0;
	}
	if (map != &mm_conn_exts)
		abort(); /* not on the parsing path */
	if (!conn_ext_live || conn_ext_key != *(const __u64 *)key)
		return -2; /* ENOENT */
	conn_ext_live = false;
	return 0;
}

static bool user_ok(const void *src, __u32 size)
{
	__u64 lo = (__u64)src, hi = lo + size;

	for (int i = 0; i < nregions; i++)
		if (lo >= regions[i].lo && hi <= regions[i].hi && hi >= lo)
			return true;
	return false;
}

static long bpf_probe_read_user(void *dst, __u32 size, const void *src)
{
	if (!user_ok(src, size)) {
		memset(dst, 0, size);
		bad_reads++;
		return -EFAULT_;
	}
	memcpy(dst, src, size);
	return 0;
}

static long bpf_probe_read_kernel(void *dst, __u32 size, const void *src)
{
	memcpy(dst, src, size);
	return 0;
}

static long bpf_loop(__u32 nr_loops, fzb_loop_cb cb, void *ctx, __u64 flags)
{
	__u32 i;

	if (nr_loops > (1U << 23) || flags)
		return -E2BIG_;
	for (i = 0; i < nr_loops;)
		if (cb(i++, ctx))
			break;
	return i;
}

static void *bpf_ringbuf_reserve(void *ringbuf, __u64 size, __u64 flags)
{
	if (ringbuf != &mm_events || size > sizeof(rb_slot) || rb_reserved)
		abort();
	if (nevents >= FZB_EVENTS_MAX)
		return NULL; /* "ring buffer full": the code counts it */
	/* reserved memory is not zeroed in the kernel either */
	memset(rb_slot, 0xa5, sizeof(rb_slot));
	rb_reserved = true;
	return rb_slot;
}

static void bpf_ringbuf_discard(void *data, __u64 flags)
{
	if (data != rb_slot || !rb_reserved)
		abort();
	rb_reserved = false;
}

static void bpf_ringbuf_submit(void *data, __u64 flags)
{
	if (data != rb_slot || !rb_reserved)
		abort();
	memcpy(&events[nevents++], rb_slot, sizeof(rb_slot));
	rb_reserved = false;
}

/* HTTP/2 data events: the fuzzed parser never turns the HTTP2 gate on */
static long bpf_ringbuf_output(void *ringbuf, void *data, __u64 size,
			       __u64 flags)
{
	abort();
	return 0;
}

static __u64 bpf_ringbuf_query(void *ringbuf, __u64 flags)
{
	return 0;
}

static __u64 bpf_ktime_get_ns(void)
{
	return clock_ns += 1000;
}

static __u32 bpf_get_smp_processor_id(void)
{
	return 0;
}

static __u64 bpf_get_current_pid_tgid(void)
{
	return (4242ULL << 32) | 4242;
}

static struct task_struct *bpf_get_current_task_btf(void)
{
	return current_task;
}

static void *bpf_task_storage_get(void *map, struct task_struct *task,
				  void *value, __u64 flags)
{
	if (map != &mm_thread_req || task != current_task)
		abort();
	if (!fz_thread_link_live && !(flags & BPF_LOCAL_STORAGE_GET_F_CREATE))
		return NULL;
	fz_thread_link_live = true;
	return &fz_thread_link;
}

/* ---- a small route table, keyed as route_compile.c keys it ---- */

static __u64 fnv(const char *s)
{
	return fnv1a64_str(FNV1A64_OFFSET, s);
}

static void add_vhost(__u32 kind, const char *host, __u32 id, __u32 flags)
{
	struct mm_vhost_key k = { .gen = 1,
				  .kind = kind,
				  .hash = kind == MM_VH_CATCHALL ? 0
								 : fnv(host) };
	struct mm_vhost_val v = { .vhost_id = id, .flags = flags };
	struct kv *t = &vhosts[id];

	memcpy(t->key, &k, sizeof(k));
	memcpy(t->val, &v, sizeof(v));
	t->live = true;
}

static void add_route(int slot, __u32 vhost, __u32 kind, const char *path,
		      __u32 route, __u8 method, __u8 flags)
{
	struct mm_route_key k = {
		.gen = 1, .vhost_id = vhost, .kind = kind, .hash = fnv(path)
	};
	struct mm_route_cands c = { .n = 1 };

	c.c[0].route_id = route;
	c.c[0].method = method;
	c.c[0].flags = flags;
	memcpy(routes[slot].key, &k, sizeof(k));
	memcpy(routes[slot].val, &c, sizeof(c));
	routes[slot].live = true;
}

/* DEFERS: the table has what leaves requests to user space, and says so */
static void routes_init(bool defers)
{
	cfg_map.route_gen = 1;
	cfg_map.flags = defers ? MM_CFG_DEFERS : 0;
	add_vhost(MM_VH_EXACT, "a", 0, 0);
	add_vhost(MM_VH_WILDCARD, "example.com", 1, defers ? MM_VHOST_DEEP : 0);
	add_vhost(MM_VH_CATCHALL, "", 2, 0);
	add_vhost(MM_VH_EXACT, "re.test", 3, defers ? MM_VHOST_HAS_REGEX : 0);
	add_route(0, 0, MM_PATH_EXACT, "/", 1, MM_M_ANY, 0);
	add_route(1, 0, MM_PATH_PREFIX, "/api", 2, MM_M_GET, 0);
	add_route(2, 0, MM_PATH_PREFIX, "/api", 3, MM_M_ANY,
		  defers ? MM_CAND_NEEDS_USER : 0);
	add_route(3, 1, MM_PATH_PREFIX, "", 4, MM_M_ANY, 0);
	add_route(4, 2, MM_PATH_PREFIX, "/x", 5, MM_M_POST, 0);
	add_route(5, 3, MM_PATH_EXACT, "/e", 6, MM_M_ANY, 0);
}

/* ---- the API ---- */

void fzb_reset(unsigned int role, int defers)
{
	memset(&conn, 0, sizeof(conn));
	memset(stats, 0, sizeof(stats));
	memset(&scratch, 0xa5,
	       sizeof(scratch)); /* per-CPU: not zeroed per run */
	memset(recent, 0, sizeof(recent));
	memset(route_cache, 0, sizeof(route_cache));
	memset(vhosts, 0, sizeof(vhosts));
	memset(routes, 0, sizeof(routes));
	memset(&fz_thread_link, 0, sizeof(fz_thread_link));
	fz_thread_link_live = false;
	memset(&conn_ext, 0xa5, sizeof(conn_ext)); /* made from conn_ext_zero */
	conn_ext_live = false;
	memset(&route_acc, 0xa5, sizeof(route_acc));
	route_acc_live = false;
	kv_next = 0;
	nevents = 0;
	bad_reads = 0;
	nregions = 0;
	routes_init(defers);
	conn_init(&conn, bpf_get_current_pid_tgid() >> 32, role, 0, 0);
	if (role == MM_ROLE_UP)
		conn.established = 1;
}

static void io(int is_read, __u32 kind, const void *buf, __u64 cnt, long ret)
{
	struct mm_io_args a = { .buf = (__u64)buf, .cnt = cnt, .kind = kind };

	if (conn.finished || ret <= 0)
		return;
	capture_io(&conn, &a, 0, ret, is_read);
	/*
	 * Another connection's parse on this CPU before the next I/O: what a
	 * head said of its route must survive in mm_route_accs, not scratch.
	 */
	memset(&scratch.ra, 0xa5, sizeof(scratch.ra));
	nregions = 0;
}

void fzb_buf(int is_read, const void *buf, unsigned long len)
{
	regions[0].lo = (__u64)buf;
	regions[0].hi = (__u64)buf + len;
	nregions = 1;
	io(is_read, MM_IO_BUF, buf, 0, len);
}

void fzb_iov(int is_read, const struct fzb_iov *iov, unsigned int cnt,
	     unsigned long ret)
{
	static struct iovec v[1024];

	if (cnt > 1024)
		abort();
	for (unsigned int i = 0; i < cnt; i++) {
		v[i].iov_base = (void *)iov[i].base;
		v[i].iov_len = iov[i].len;
	}
	/* an iovec array of the syscall and every buffer in it */
	regions[0].lo = (__u64)v;
	regions[0].hi = (__u64)(v + cnt);
	nregions = 1;
	if (cnt) {
		regions[1].lo = (__u64)iov[0].base;
		regions[1].hi = (__u64)iov[cnt - 1].base + iov[cnt - 1].len;
		nregions = 2;
	}
	io(is_read, MM_IO_IOV, v, cnt, ret);
}

void fzb_eof(void)
{
	if (!conn.finished)
		capture_eof(&conn);
}

void fzb_close(void)
{
	conn_finish(&conn, bpf_ktime_get_ns());
}

const struct mm_conn *fzb_conn(void)
{
	return &conn;
}

__u64 fzb_stat(unsigned int idx)
{
	return idx < MM_STAT__COUNT ? stats[idx] : 0;
}

int fzb_nevents(void)
{
	return nevents;
}

const struct fzb_event *fzb_event(int i)
{
	return &events[i];
}

int fzb_ext_live(void)
{
	return conn_ext_live;
}

int fzb_route_acc_live(void)
{
	return route_acc_live;
}

__u64 fzb_bad_reads(void)
{
	return bad_reads;
}
