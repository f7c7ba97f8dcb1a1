/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every BPF program test shares: the loaded test object
 * (progs/parse_test.bpf.c, which includes the data path's headers
 * unchanged), one "syscall" per call into the real capture_io(), and the
 * events and counters it produced. Tests use selftests/unit/test.h.
 */
#ifndef MM_BPF_FIXTURE_H
#define MM_BPF_FIXTURE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "bpf/milometer.h"
#include "bpf/conn.bpf.h"

#define FX_EVENTS_MAX 4096

/* An event as submitted: struct mm_http_event, then head[] for MM_EVT_HEAD
 * (a struct with a flexible array is no member: clang -Werror says so). */
struct fx_event {
	char raw[sizeof(struct mm_http_event) + MM_HEAD_MAX];
} __attribute__((aligned(8)));

#define FX_EV(i)   ((const struct mm_http_event *)fx_ev[i].raw)
#define FX_HEAD(i) (fx_ev[i].raw + sizeof(struct mm_http_event))

/* Events drained so far in this test (fx_reset() clears them). */
extern struct fx_event fx_ev[FX_EVENTS_MAX];
extern int fx_nev;

/*
 * Load the test object once (a failure is printed with the libbpf/verifier
 * reason and every test fails on it), then start a test afresh: connection
 * slots zeroed, events drained and forgotten, counters re-based. 0 or -errno.
 */
int fx_reset(void);

/* A connection in SLOT, given its id as at first sight (MM_ROLE_UNKNOWN)
 * or at connect() (MM_ROLE_UP). */
int fx_open(unsigned int slot, unsigned int role);
/* The listener port connections opened from now on carry (0: none). */
void fx_listener_port(unsigned int port);

/* Calls return 0 or -errno (the program did not run). */
int fx_buf(unsigned int slot, int is_read, const void *buf, size_t len);
int fx_chunks(unsigned int slot, int is_read, const void *buf, size_t len,
	      size_t chunk);
int fx_iov(unsigned int slot, int is_read, const struct iovec *iov,
	   unsigned int cnt, size_t ret);
int fx_msg(unsigned int slot, int is_read, const struct iovec *iov,
	   unsigned int cnt, size_t ret);
int fx_eof(unsigned int slot);
/*
 * The I/Os from now on are on a TCP socket whose write_seq (the sequence
 * number after the last byte written) is WSEQ; fx_reset() goes back to
 * no socket (a held response then cannot be ordered: dropped).
 */
void fx_write_seq(uint32_t wseq);
int fx_close(unsigned int slot);

/* Drains the ring buffer into fx_ev; returns fx_nev. */
int fx_drain(void);
/* Counter IDX (enum mm_stat) summed over CPUs, since fx_reset(). */
uint64_t fx_stat(unsigned int idx);
/* The connection state in SLOT (as BPF left it). */
int fx_conn(unsigned int slot, struct mm_conn *out);
/* Overwrites it: what another CPU's program left mid-run, say. */
int fx_conn_set(unsigned int slot, const struct mm_conn *in);

/* Route table maps of the test object (for route_sync-like filling). */
int fx_map_fd(const char *name);
/*
 * The NTH slot (from 0) whose connection state starts LINE_OFF bytes into a
 * cache line, or -ENOENT: which of its lines a run touches depends on it.
 */
int fx_slot_at(unsigned int line_off, unsigned int nth);
/* The program every fx_buf/fx_iov/fx_msg runs (for its bpf_stats). */
int fx_io_prog_fd(void);

#endif /* MM_BPF_FIXTURE_H */
