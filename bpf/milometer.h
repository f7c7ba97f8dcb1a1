/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Types and constants shared by the BPF programs and user space: ring-buffer
 * events, map keys and values, per-CPU stat indexes. Fixed-width types,
 * explicit padding, sizes pinned with _Static_assert so both sides agree.
 *
 * Route table (compiled by policy/gateway/route_compile.c, looked up by BPF and by
 * policy/gateway/route_match.c for `milometer explain`):
 *
 *   host  --mm_vhosts-->  vhost id          exact host, then "*.suffix"
 *                                           longest first, then catch-all
 *                                           (keyed also by gateway slot
 *                                           and listener port)
 *   (vhost, Exact, hash(path))         --mm_routes-->      candidate list
 *   (vhost, Prefix, hash(prefix))      --mm_routes-->      candidate list
 *
 * Prefix keys are normalised without a trailing '/', "/" is the empty
 * string, so the BPF parser hashes the bytes before every '/' of the path
 * and the whole path. Candidates in one list are already in Gateway API
 * precedence order (method, header count, query count, age, name, rule
 * order); BPF takes the first whose method fits. A candidate flagged
 * MM_CAND_NEEDS_USER (header or query matches) reached first means BPF
 * cannot decide: the event carries the request head and user space finishes.
 * Every key carries a generation: user space writes generation N+1 next to
 * N, flips mm_config.route_gen, then deletes N — a request sees one table.
 */
#ifndef MM_BPF_MILOMETER_H
#define MM_BPF_MILOMETER_H

#include "bpf/fnv1a.h"

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define MM_HOST_MAX       128 /* Host header bytes kept for wildcard lookup */
#define MM_HEAD_MAX       512 /* request head bytes sent for user-space finish */
#define MM_PATH_PREFIXES  16  /* '/' boundaries hashed per path */
#define MM_ROUTE_CANDS    8   /* candidates per (vhost, path) key */
#define MM_PIPELINE_DEPTH 32  /* requests in flight per connection */
#define MM_COMM_LEN       16
#define MM_TARGET_WORDS                                                        \
	65536 /* u64 words of the tgid bitmap: PID_MAX_LIMIT (4M) bits */

#define MM_ROUTE_UNMATCHED 0xffffffffu /* no route: attributed to "unmatched" */
#define MM_ROUTE_DEFER     0xfffffffeu /* BPF could not decide: see head[] */
#define MM_ROUTE_UNKNOWN   0xfffffffdu /* head truncated before host/path */

/* FNV-1a 64 (bpf/fnv1a.h, one copy for both sides), over lower-cased host
 * bytes and raw path bytes. */
#define MM_FNV_OFFSET FNV1A64_OFFSET
#define MM_FNV_PRIME  FNV1A64_PRIME

enum mm_leg {
	MM_LEG_DOWNSTREAM = 0, /* client -> proxy (accepted socket) */
	MM_LEG_UPSTREAM = 1,   /* proxy -> backend (connected socket) */
};

enum mm_method {
	MM_M_OTHER = 0,
	MM_M_GET,
	MM_M_HEAD,
	MM_M_POST,
	MM_M_PUT,
	MM_M_DELETE,
	MM_M_CONNECT,
	MM_M_OPTIONS,
	MM_M_TRACE,
	MM_M_PATCH,
	MM_M__COUNT,
};
#define MM_M_ANY 0xff /* candidate matches any method */

enum mm_vhost_kind {
	MM_VH_EXACT = 0,    /* hash of the whole lower-cased host */
	MM_VH_WILDCARD = 1, /* hash of the suffix after "*." */
	MM_VH_CATCHALL = 2, /* hash 0: routes with no hostname anywhere */
};

struct mm_vhost_key {
	__u32 gen;
	__u8 kind; /* enum mm_vhost_kind */
	__u8 gw;   /* gateway slot of the serving process (mm_target.gw) */
	/*
	 * Gateway listener port whose routes the vhost holds, as mm_listeners
	 * maps the accepting socket's port; 0: every listener of the slot
	 * (a Gateway with one port, or a socket on no listener's port).
	 */
	__u16 port;
	__u64 hash;
};
_Static_assert(sizeof(struct mm_vhost_key) == 16, "mm_vhost_key");

struct mm_vhost_val {
	__u32 vhost_id;
	__u32 flags; /* MM_VHOST_* */
};
_Static_assert(sizeof(struct mm_vhost_val) == 8, "mm_vhost_val");

#define MM_VHOST_HAS_REGEX 0x1 /* regex paths rank between Exact and Prefix */
#define MM_VHOST_DEEP      0x2 /* a prefix deeper than MM_PATH_PREFIXES */

enum mm_path_kind {
	MM_PATH_EXACT = 0,
	MM_PATH_PREFIX = 1,
};

struct mm_route_key {
	__u32 gen;
	__u32 vhost_id;
	__u32 kind; /* enum mm_path_kind */
	__u32 _pad;
	__u64 hash;
};
_Static_assert(sizeof(struct mm_route_key) == 24, "mm_route_key");

#define MM_CAND_NEEDS_USER 0x1 /* header/query matches: user space decides */

struct mm_route_cand {
	__u32 route_id; /* index into the generation's route list */
	__u16 rule_idx;
	__u8 method; /* enum mm_method or MM_M_ANY */
	__u8 flags;  /* MM_CAND_* */
};

struct mm_route_cands {
	__u32 n;
	__u32 _pad;
	struct mm_route_cand c[MM_ROUTE_CANDS];
};
_Static_assert(sizeof(struct mm_route_cands) == 8 + 8 * MM_ROUTE_CANDS,
	       "mm_route_cands");

/* Single-entry array map: settings that change at run time. */
struct mm_config {
	__u32 route_gen;
	__u32 flags; /* MM_CFG_* */
};

#define MM_CFG_HTTP2 0x1 /* gate HTTP2: send h2 connections' bytes up */
#define MM_CFG_GW_SLOTS                                                        \
	0x2 /* the table has gateway slots past 0: a new
			     * connection looks its process's slot up */
#define MM_CFG_DEFERS                                                          \
	0x4 /* the table can leave a request to user space
			     * (header, query or regex matches, deep
			     * prefixes): keep heads that span windows */
#define MM_CFG_LISTENERS                                                       \
	0x8 /* mm_listeners has entries: a new accepted
			      * connection looks its listener port up */

/*
 * mm_listeners: which Gateway listener port an accepted socket's local
 * port serves, per gateway slot (the proxy's socket port is the listener
 * port, or the Service's targetPort for it, or --listener-port's mapping).
 * Only slots whose Gateway has listeners on two ports or more have entries.
 */
struct mm_listener_key {
	__u32 gw;
	__u32 sport; /* the accepted socket's local port */
};
_Static_assert(sizeof(struct mm_listener_key) == 8, "mm_listener_key");

/*
 * Why a process is traced (value of mm_targets), and the route table it is
 * attributed in: gw is the slot of the Gateway its pod serves (from
 * mm_target_cgroups at exec, the parent's at fork), 0 for the default table
 * (--gateway, or every Gateway merged). A connection takes its process's
 * slot when it is first seen.
 */
struct mm_target {
	__u32 source; /* MM_TGT_* */
	__u32 gw;
};
#define MM_GW_SLOTS   256 /* gateway slots per node (u8 in events) */
#define MM_TGT_PID    1
#define MM_TGT_COMM   2
#define MM_TGT_CGROUP 3
#define MM_TGT_FORK   4 /* inherited from a traced parent */

#define MM_EV_ABORTED     0x01 /* connection closed/reset before response end */
#define MM_EV_HEAD_TRUNC  0x02 /* request head longer than MM_HEAD_MAX */
#define MM_EV_CLOSE_DELIM 0x04 /* response body ended by close */
#define MM_EV_NO_RESPONSE 0x08 /* aborted before any response byte */
#define MM_EV_UNTRACKED                                                        \
	0x10 /* pipelined past MM_PIPELINE_DEPTH: no byte counts; route and start kept for MM_PIPELINE_DEPTH more, else unknown */

enum mm_event_type {
	/*
	 * One completed (or aborted) HTTP exchange on one leg, sent when the
	 * last response byte has been seen or the connection went away.
	 */
	MM_EVT_EXCHANGE = 1,
	/*
	 * The head of a request BPF could not attribute (route_id ==
	 * MM_ROUTE_DEFER), sent when the head ends; the exchange event with the
	 * same (conn_id, req_seq) follows. Carries head_len bytes in head[].
	 */
	MM_EVT_HEAD = 2,
	/*
	 * Bytes of an HTTP/2 connection (gate HTTP2), in order per direction,
	 * for the user-space decoder (struct mm_data_event + len bytes).
	 */
	MM_EVT_H2_DATA = 3,
	/* The HTTP/2 connection ended (closed, or its feed lost bytes). */
	MM_EVT_H2_CLOSE = 4,
	/*
	 * A target process forked a new one (struct mm_fork_event), sent with
	 * a wakeup while TLS capture is on: it attaches its per-process
	 * uprobes now rather than at its next scan.
	 */
	MM_EVT_FORK = 5,
};

/*
 * Parser steps per bpf_loop callback (const volatile mm_parse_steps, set by
 * the loader before load). Since 6.7 the verifier walks a callback until
 * its states converge, and each step costs ~240k processed instructions
 * there: on one 6.18 build 1, 2, 3 and 4 steps took 376k, 620k, 847k and
 * more than the 1M limit, where another build of the same version had
 * taken 4 at ~500k. Two keep a third of the limit in hand; the loader
 * tries fewer when the node's verifier still refuses (E2BIG).
 */
#define MM_PARSE_STEPS_MAX     4
#define MM_PARSE_STEPS_DEFAULT 2

struct mm_fork_event {
	__u8 type; /* MM_EVT_FORK */
	__u8 _pad[3];
	__u32 tgid; /* the new process */
};
_Static_assert(sizeof(struct mm_fork_event) == 8, "mm_fork_event");

#define MM_DATA_CHUNK 4096 /* bytes per MM_EVT_H2_DATA event at most */

#define MM_DATA_FROM_START 0x1 /* the connection was seen from its first byte */
#define MM_DATA_LOST       0x2 /* MM_EVT_H2_CLOSE: bytes were lost, not a close */
#define MM_DATA_UPGRADE                                                        \
	0x4 /* data[] is the HTTP/1.1 request answered with 101 (h2c) */

enum mm_data_dir {
	MM_DIR_FROM_CLIENT = 0,
	MM_DIR_FROM_SERVER = 1,
};

struct mm_data_event {
	__u8 type;  /* MM_EVT_H2_DATA, MM_EVT_H2_CLOSE */
	__u8 dir;   /* enum mm_data_dir */
	__u8 leg;   /* enum mm_leg */
	__u8 flags; /* MM_DATA_* */
	__u16 len;  /* bytes in data[] */
	__u8 gw;    /* gateway slot (struct mm_target) */
	__u8 _pad;
	__u32 tgid;
	__u32 route_gen; /* the route table when the bytes were captured */
	__u64 conn_id;
	__u64 ts_ns;
	char data[];
};
_Static_assert(sizeof(struct mm_data_event) == 32, "mm_data_event");

struct mm_http_event {
	__u8 type;      /* enum mm_event_type */
	__u8 leg;       /* enum mm_leg */
	__u8 method;    /* enum mm_method */
	__u8 flags;     /* MM_EV_* */
	__u16 status;   /* final status; 0 when aborted before one;
			    * MM_EVT_HEAD: the listener port (mm_vhost_key)
			    * the head's route is decided in */
	__u16 head_len; /* MM_EVT_HEAD: bytes valid in head[] */
	__u32 tgid;
	__u32 route_gen;
	__u32 route_id;   /* or MM_ROUTE_* */
	__u8 rule_idx;    /* Gateway API allows 16 rules per HTTPRoute */
	__u8 gw;          /* gateway slot: the route table of route_id */
	__u16 _pad;       /* zero; user space's own record holds what it adds */
	__u32 req_seq;    /* request number on this connection */
	__u32 parent_seq; /* upstream leg: the downstream request it serves */
	__u64 conn_id;    /* unique per connection for the agent's lifetime */
	__u64 parent_conn_id; /* upstream leg: its downstream connection, 0 if unknown */
	__u64 start_ns; /* first request byte: downstream received / upstream sent */
	__u64 end_ns; /* last response byte: downstream sent / upstream received */
	__u64 req_bytes;  /* request head + body */
	__u64 resp_bytes; /* response head(s) + body */
	char head[];      /* MM_EVT_HEAD only */
};
_Static_assert(sizeof(struct mm_http_event) == 80, "mm_http_event");
_Static_assert(__builtin_offsetof(struct mm_http_event, req_seq) == 24,
	       "mm_http_event: fields after the pad keep their offsets");

/* Per-CPU counters (mm_stats, an array indexed by these). */
enum mm_stat {
	MM_STAT_EVENTS,        /* events written to the ring buffer */
	MM_STAT_RINGBUF_FULL,  /* events lost: ring buffer full */
	MM_STAT_CONN_MAP_FULL, /* connections not tracked: map full */
	MM_STAT_HEAD_TRUNC,    /* request heads longer than MM_HEAD_MAX */
	MM_STAT_UNPARSED,      /* connections that stopped looking like HTTP */
	MM_STAT_PIPELINE_FULL, /* pipelined requests past MM_PIPELINE_DEPTH */
	MM_STAT_ABORTED,    /* exchanges ended by close before response end */
	MM_STAT_SCAN_LIMIT, /* bytes of a syscall past what one hook scans */
	MM_STAT_IOV_LIMIT,  /* iovecs past what one hook walks */
	MM_STAT_DEFERRED,   /* attributions left to user space */
	MM_STAT_FORKS,      /* processes added by fork of a target */
	MM_STAT_NOT_HTTP,   /* sockets found mid-stream that are not HTTP */
	MM_STAT_PIPELINE_LOST, /* requests past MM_PIPELINE_DEPTH + 255: not reported */
	MM_STAT_NO_BUFFER, /* I/O whose bytes could not be read (io_uring, splice, bad iovec/msghdr) */
	MM_STAT_LINK_FAIL, /* thread link not stored (task storage full) */
	MM_STAT_CONNS_OPENED, /* connections given state (open = opened - closed) */
	MM_STAT_CONNS_CLOSED, /* tracked connections closed */
	MM_STAT_RESYNCED, /* streams first seen mid-message, picked up at the next turn */
	MM_STAT_TLS_IO, /* SSL_read/SSL_write plaintext I/Os parsed (TLSCapture) */
	MM_STAT_TLS_NO_SOCKET, /* SSL_* I/Os whose socket no syscall named (memory BIO): not parsed */
	MM_STAT_H2_CONNS, /* connections found to speak HTTP/2 (gate HTTP2) */
	MM_STAT_H2_LOST, /* HTTP/2 feeds stopped: bytes could not be read or sent up */
	MM_STAT_TLS_NO_CONN, /* SSL_* I/Os returned after their socket was gone (or not tracked): dropped */
	MM_STAT_TLS_STREAMS, /* streams of TLS records (HTTPS listener or backend): not parsed, TLSCapture's */
	MM_STAT_ROUTE_STATE_LOST, /* request heads spanning reads with no mm_route_accs entry to be had: finished in user space */
	MM_STAT_TARGETS_FULL, /* processes traced on the default route table: mm_targets full at fork/exec */
	MM_STAT_TLS_CALL_LOST, /* TLS calls not followed: no storage for the call, or a Go call returned with bytes and no entry */
	MM_STAT_RESP_FIRST, /* upstream responses read before their request's send tracepoint ran: paired when it did */
	MM_STAT_RESP_IN_PARSE, /* upstream responses read while their request's head was parsed on another CPU: paired as it ended */
	MM_STAT__COUNT,
};

/*
 * How the data path sees socket I/O, chosen by the agent at load time
 * (const volatile mm_capture_mode) and reported by `ctl status` and
 * milometer_capture_mode.
 */
enum mm_capture_mode {
	/*
	 * tp_btf on sock:sock_recv_length / sock:sock_send_length (Linux 6.3+):
	 * runs only on socket I/O, state in the socket's own storage.
	 */
	MM_CAPTURE_SOCK_TP = 1,
	/*
	 * tp_btf on raw_syscalls:sys_exit with the syscall's registers (5.17+,
	 * for bpf_loop): runs on every syscall of the node, filters on the
	 * syscall number and the process first; state in a hash by socket.
	 */
	MM_CAPTURE_SYS_EXIT = 2,
};

#endif /* MM_BPF_MILOMETER_H */
