// SPDX-License-Identifier: GPL-2.0-only
/*
 * The data path's parser, exchange bookkeeping and route lookup, run as they
 * are (the bpf/ headers included unchanged) by BPF_PROG_TEST_RUN, as the kernel's
 * tools/testing/selftests/bpf/prog_tests do. raw_tp programs run on the
 * calling task: bpf_probe_read_user() reads the test's own buffers, and
 * bpf_get_current_task_btf() / task storage are the test process's.
 *
 * A connection state lives in an ARRAY map (the test's stand-in for the
 * socket storage or the mm_conns hash of milometer.bpf.c); user space zeroes
 * a slot, runs t_open, then t_io per "syscall" with the arguments in the
 * t_* globals below, t_eof for a read of 0, t_close for the end of the
 * connection (FIN or destroy).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "bpf/milometer.h"
#include "bpf/conn.bpf.h"
#include "bpf/maps.bpf.h"
#include "bpf/http_parse.bpf.h"
#include "bpf/route_lookup.bpf.h"
#include "bpf/exchange.bpf.h"

/* t_io: nonzero, the I/O's socket is one whose write_seq is t_wseq */
__u64 t_sk;
__u32 t_wseq;
#define MM_SK_WRITE_SEQ(s) t_wseq
#include "bpf/capture.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * Tests use the first 4 slots; the bench (bench_bpf_exchange) picks two
 * whose state starts where the socket storage's does in its cache line.
 */
#define T_CONNS 16

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, T_CONNS);
	__type(key, __u32);
	__type(value, struct mm_conn);
} t_conns SEC(".maps");

/* Inputs of the next run, written by user space through the skeleton. */
__u32 t_conn;  /* slot of t_conns */
__u32 t_role;  /* t_open: MM_ROLE_* the connection starts with */
__u32 t_lport; /* t_open: its listener port (as mm_listeners would map it) */
__u32 t_kind;  /* t_io: enum mm_io */
__u32 t_read;  /* t_io: 1 read (recv*), 0 write (send*) */
__u64 t_buf;   /* t_io: buffer, iovec array or msghdr (user address) */
__u64 t_cnt;   /* t_io: iovcnt for MM_IO_IOV */
__s64 t_ret;   /* t_io: bytes the syscall moved */
/* Outputs. */
__s32 t_err; /* -1: no such slot */

static __always_inline struct mm_conn *t_slot(void)
{
	__u32 k = t_conn;
	struct mm_conn *c = bpf_map_lookup_elem(&t_conns, &k);

	t_err = c ? 0 : -1;
	return c;
}

/* A connection given its identity, as at its first sight or connect(). */
SEC("raw_tp")
int t_open(void *ctx)
{
	struct mm_conn *c = t_slot();

	if (c) {
		conn_init(c, bpf_get_current_pid_tgid() >> 32, t_role, 0, 0);
		c->lport = t_lport;
		if (t_role == MM_ROLE_UP)
			c->established = 1;
	}
	return 0;
}

/* One socket I/O of t_ret bytes, as both capture modes hand it over. */
SEC("raw_tp")
int t_io(void *ctx)
{
	struct mm_io_args a = { .buf = t_buf, .cnt = t_cnt, .kind = t_kind };
	struct mm_conn *c = t_slot();

	if (c && !c->finished && t_ret > 0)
		capture_io(c, &a, t_sk, t_ret, t_read);
	return 0;
}

/* A read that returned 0. */
SEC("raw_tp")
int t_eof(void *ctx)
{
	struct mm_conn *c = t_slot();

	if (c && !c->finished)
		capture_eof(c);
	return 0;
}

/* The connection ends (FIN_WAIT1 / LAST_ACK / tcp_destroy_sock). */
SEC("raw_tp")
int t_close(void *ctx)
{
	struct mm_conn *c = t_slot();

	if (c)
		conn_finish(c, bpf_ktime_get_ns());
	return 0;
}
