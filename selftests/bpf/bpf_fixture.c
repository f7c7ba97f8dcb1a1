// SPDX-License-Identifier: Apache-2.0
/*
 * The BPF test object, loaded once per run, driven one BPF_PROG_TEST_RUN per
 * simulated syscall: see bpf_fixture.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getcpu, CPU_SET */
#endif
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "selftests/bpf/bpf_fixture.h"
#include "selftests/bpf/parse_test.skel.h"

struct fx_event fx_ev[FX_EVENTS_MAX];
int fx_nev;

static struct parse_test_bpf *skel;
static struct ring_buffer *rb;
static int load_err;
static uint64_t stat_base[MM_STAT__COUNT];
static int ncpus;

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	/* the verifier log says why a load failed: always show warnings */
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct fx_event *d;

	(void)ctx;
	if (fx_nev >= FX_EVENTS_MAX || size < sizeof(struct mm_http_event))
		return 0;
	d = &fx_ev[fx_nev++];
	memset(d, 0, sizeof(*d));
	memcpy(d->raw, data, size < sizeof(d->raw) ? size : sizeof(d->raw));
	return 0;
}

static int load(void)
{
	int err;

	libbpf_set_print(libbpf_print);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	{
		/*
		 * Every run on one CPU: per-CPU state (mm_scratch, the route
		 * cache) is then shared between the connections of a test as
		 * between a proxy's sockets on a busy CPU, which some tests
		 * rely on to mean anything.
		 */
		cpu_set_t one;
		int cpu = sched_getcpu();

		CPU_ZERO(&one);
		CPU_SET(cpu < 0 ? 0 : cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			return -errno;
	}
	skel = parse_test_bpf__open();
	/*
	 * The tests read the ring with consume(), never epoll: no wakeups
	 * (each is an irq_work IPI, ~10 us in a VM, that would dwarf the
	 * parser in run-time figures).
	 */
	if (skel) {
		skel->rodata->mm_wakeup_bytes = UINT64_MAX;
		if (parse_test_bpf__load(skel)) {
			parse_test_bpf__destroy(skel);
			skel = NULL;
		}
	}
	if (!skel) {
		err = -errno;
		fprintf(stderr,
			"bpf_tests: loading the parser test object failed (%s): run as root on a kernel with BTF, bpf_loop and task storage (5.17+)\n",
			strerror(-err));
		return err;
	}
	if (bpf_map__value_size(skel->maps.t_conns) != sizeof(struct mm_conn)) {
		fprintf(stderr,
			"bpf_tests: struct mm_conn is %u bytes in BPF, %zu here: rebuild both\n",
			bpf_map__value_size(skel->maps.t_conns),
			sizeof(struct mm_conn));
		return -EPROTO;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.mm_events), on_event, NULL,
			      NULL);
	if (!rb) {
		err = -errno;
		fprintf(stderr, "bpf_tests: ring buffer: %s\n", strerror(-err));
		return err;
	}
	return 0;
}

static uint64_t stat_now(unsigned int idx)
{
	uint64_t v[ncpus > 0 ? ncpus : 1], sum = 0;
	__u32 k = idx;

	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.mm_stats), &k, v))
		return UINT64_MAX;
	for (int i = 0; i < ncpus; i++)
		sum += v[i];
	return sum;
}

int fx_reset(void)
{
	static struct mm_conn zero;

	if (!skel && !load_err)
		load_err = load();
	if (load_err)
		return load_err;
	for (__u32 k = 0; k < bpf_map__max_entries(skel->maps.t_conns); k++)
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.t_conns), &k,
					&zero, BPF_ANY))
			return -errno;
	/* what a test that failed half-way left: held heads of no connection */
	{
		int fd = bpf_map__fd(skel->maps.mm_route_accs);
		__u64 key;

		while (!bpf_map_get_next_key(fd, NULL, &key))
			if (bpf_map_delete_elem(fd, &key))
				return -errno;
	}
	ring_buffer__consume(rb);
	fx_nev = 0;
	skel->bss->t_sk = 0;
	for (unsigned int i = 0; i < MM_STAT__COUNT; i++)
		stat_base[i] = stat_now(i);
	return 0;
}

static int run(struct bpf_program *prog)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	int err;

	err = bpf_prog_test_run_opts(bpf_program__fd(prog), &opts);
	if (err)
		return -errno;
	if (opts.retval || skel->bss->t_err)
		return -EINVAL;
	return 0;
}

void fx_listener_port(unsigned int port)
{
	skel->bss->t_lport = port;
}

int fx_open(unsigned int slot, unsigned int role)
{
	skel->bss->t_conn = slot;
	skel->bss->t_role = role;
	return run(skel->progs.t_open);
}

/*
 * The parser reads user memory with bpf_probe_read_user(), which does not
 * fault pages in: after a real read()/write() the buffer is resident, but a
 * test's string constant may never have been touched (its read then fails
 * and the stream goes opaque, at random). Touch what the program will read.
 */
static void touch(const void *p, size_t len)
{
	const volatile char *c = p;

	for (size_t i = 0; i < len; i += 64)
		(void)c[i];
	if (len)
		(void)c[len - 1];
}

/* the iovec array and the first ret bytes it points to, as the program */
static void touch_iov(const struct iovec *iov, unsigned int cnt, size_t ret)
{
	touch(iov, cnt * sizeof(*iov));
	for (unsigned int i = 0; i < cnt && ret; i++) {
		size_t n = iov[i].iov_len < ret ? iov[i].iov_len : ret;

		touch(iov[i].iov_base, n);
		ret -= n;
	}
}

static int io(unsigned int slot, int is_read, unsigned int kind,
	      const void *buf, uint64_t cnt, size_t ret)
{
	if (kind == MM_IO_BUF)
		touch(buf, ret);
	else if (kind == MM_IO_IOV)
		touch_iov(buf, cnt, ret);
	else if (kind == MM_IO_MSG)
		touch_iov(((const struct msghdr *)buf)->msg_iov,
			  ((const struct msghdr *)buf)->msg_iovlen, ret);
	skel->bss->t_conn = slot;
	skel->bss->t_read = !!is_read;
	skel->bss->t_kind = kind;
	skel->bss->t_buf = (uint64_t)(uintptr_t)buf;
	skel->bss->t_cnt = cnt;
	skel->bss->t_ret = (int64_t)ret;
	return run(skel->progs.t_io);
}

void fx_write_seq(uint32_t wseq)
{
	skel->bss->t_sk = 1;
	skel->bss->t_wseq = wseq;
}

int fx_buf(unsigned int slot, int is_read, const void *buf, size_t len)
{
	return io(slot, is_read, MM_IO_BUF, buf, 0, len);
}

int fx_chunks(unsigned int slot, int is_read, const void *buf, size_t len,
	      size_t chunk)
{
	const char *p = buf;
	int err;

	for (size_t off = 0; off < len; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk;

		err = fx_buf(slot, is_read, p + off, n);
		if (err)
			return err;
	}
	return 0;
}

int fx_iov(unsigned int slot, int is_read, const struct iovec *iov,
	   unsigned int cnt, size_t ret)
{
	return io(slot, is_read, MM_IO_IOV, iov, cnt, ret);
}

int fx_msg(unsigned int slot, int is_read, const struct iovec *iov,
	   unsigned int cnt, size_t ret)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = cnt };

	return io(slot, is_read, MM_IO_MSG, &m, 0, ret);
}

int fx_eof(unsigned int slot)
{
	skel->bss->t_conn = slot;
	return run(skel->progs.t_eof);
}

int fx_close(unsigned int slot)
{
	skel->bss->t_conn = slot;
	return run(skel->progs.t_close);
}

int fx_drain(void)
{
	ring_buffer__consume(rb);
	return fx_nev;
}

uint64_t fx_stat(unsigned int idx)
{
	return stat_now(idx) - stat_base[idx];
}

int fx_conn(unsigned int slot, struct mm_conn *out)
{
	__u32 k = slot;

	return bpf_map_lookup_elem(bpf_map__fd(skel->maps.t_conns), &k, out)
		       ? -errno
		       : 0;
}

int fx_conn_set(unsigned int slot, const struct mm_conn *in)
{
	__u32 k = slot;

	return bpf_map_update_elem(bpf_map__fd(skel->maps.t_conns), &k, in,
				   BPF_EXIST)
		       ? -errno
		       : 0;
}

int fx_slot_at(unsigned int line_off, unsigned int nth)
{
	/* struct bpf_array's values start 312 bytes into it (6.18) */
	const unsigned int base = 312,
			   stride = (sizeof(struct mm_conn) + 7) & ~7u;

	for (unsigned int k = 0; k < bpf_map__max_entries(skel->maps.t_conns);
	     k++)
		if ((base + k * stride) % 64 == line_off && !nth--)
			return (int)k;
	return -ENOENT;
}

int fx_io_prog_fd(void)
{
	return skel ? bpf_program__fd(skel->progs.t_io) : -ENOENT;
}

int fx_map_fd(const char *name)
{
	struct bpf_map *m = bpf_object__find_map_by_name(skel->obj, name);

	return m ? bpf_map__fd(m) : -ENOENT;
}
