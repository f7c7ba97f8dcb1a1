/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data path's parser (bpf/capture.bpf.h and what it includes, unchanged)
 * built as user-space C with emulated helpers and maps, for
 * fuzz_bpf_parser.c. One connection at a time; I/O as the capture hooks
 * hand it over (buffer or iovec array, bytes moved, read or write).
 */
#ifndef MM_FUZZ_BPF_PARSER_GLUE_H
#define MM_FUZZ_BPF_PARSER_GLUE_H

/* No libc here: the glue's side is compiled against vmlinux.h. */
#include "bpf/milometer.h"
#include "bpf/conn.bpf.h"

#define FZB_EVENTS_MAX 2048

/* An event as submitted: struct mm_http_event, then head[] for MM_EVT_HEAD. */
struct fzb_event {
	char raw[sizeof(struct mm_http_event) + 2 * MM_HEAD_MAX];
} __attribute__((aligned(8)));

struct fzb_iov {
	const void *base;
	unsigned long len;
};

/* Fresh connection state, counters, events; ROLE as at first sight
 * (MM_ROLE_UNKNOWN) or at connect() (MM_ROLE_UP). */
void fzb_reset(unsigned int role, int defers);
/* 0: the parser takes one byte per step (no word paths): the oracle run */
extern int fzb_word_paths;
/* 1: mm_route_accs is full, every update fails (as with 65 536 entries) */
extern int fzb_route_accs_full;
void fzb_buf(int is_read, const void *buf, unsigned long len);
/* writev/readv of CNT iovecs that moved RET bytes */
void fzb_iov(int is_read, const struct fzb_iov *iov, unsigned int cnt,
	     unsigned long ret);
void fzb_eof(void);
void fzb_close(void);

const struct mm_conn *fzb_conn(void);
__u64 fzb_stat(unsigned int idx);
int fzb_nevents(void);
const struct fzb_event *fzb_event(int i);
/* User reads outside the memory the syscall handed over. */
__u64 fzb_bad_reads(void);
/* the connection has an mm_conn_exts entry (pipelined past MM_SLOTS_INLINE) */
int fzb_ext_live(void);
int fzb_route_acc_live(void);

#endif /* MM_FUZZ_BPF_PARSER_GLUE_H */
