/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Kernel-side state of the data path: per-socket HTTP/1.x parser state, the
 * pipeline of requests awaiting responses, the per-CPU scratch the parser
 * loops work in. Only BPF reads these (bpftool can dump them thanks to BTF);
 * user space sees struct mm_http_event.
 */
#ifndef MM_CONN_BPF_H
#define MM_CONN_BPF_H

/* user-space readers of these structs (selftests/bpf) get <linux/types.h> */
#ifdef __bpf__
#include "vmlinux.h"
#endif

#include "bpf/milometer.h"

#define MM_SCRATCH 512 /* user bytes copied and scanned per window */
/*
 * Parser steps per bpf_loop callback (a loop, not unrolled): mm_parse_steps
 * of them (http_parse.bpf.h), MM_BLOCK unless the loader sets another.
 */
#ifndef MM_BLOCK
#define MM_BLOCK MM_PARSE_STEPS_DEFAULT
#endif
#define MM_SKIP_WORDS 4  /* words of a skipped line per parser step */
#define MM_IOV_BATCH  8  /* iovecs read per user-memory read (a power of 2) */
#define MM_WINDOWS    64 /* windows (parse or skip steps) per iovec */
#define MM_IOV_MAX                                                             \
	1024 /* iovecs walked per readv/writev/recvmsg/sendmsg (IOV_MAX) */
#define MM_NAME_MAX          20    /* header name bytes compared */
#define MM_DOTS_MAX          8     /* host labels tried as wildcard suffixes */
#define MM_RECENT_SLOTS      16384 /* mm_recent: power of 2 */
#define MM_ROUTE_CACHE_SLOTS 1024  /* mm_route_cache per CPU: power of 2 */
#define MM_SLOTS_INLINE                                                        \
	4 /* pipeline slots in mm_conn (power of 2); the rest in mm_conn_exts */

/*
 * clang drops "i & (N - 1)" when an earlier check already bounds i, but that
 * check ran on a copy of i and the verifier sees the index as unbounded;
 * hiding i's value behind an empty asm first keeps the mask.
 */
#ifndef barrier_var
#define barrier_var(var) asm volatile("" : "+r"(var))
#endif

/* &arr[i & (n - 1)] with the mask kept for the verifier (n a power of 2) */
#define IDX(arr, i, n)                                                         \
	({                                                                     \
		__u32 __i = (i);                                               \
		barrier_var(__i);                                              \
		__i &= (n)-1;                                                  \
		&(arr)[__i];                                                   \
	})

/* How the syscall behind a socket I/O hands its bytes over. */
enum mm_io {
	MM_IO_NONE = 0, /* no user buffer we can read (io_uring, splice) */
	MM_IO_BUF,      /* contiguous buffer: read, write, recvfrom, sendto */
	MM_IO_IOV,      /* iovec array: readv, writev */
	MM_IO_MSG,      /* msghdr: recvmsg, sendmsg */
	MM_IO_FILE,     /* sendfile: body bytes only, never parsed */
};

/* The arguments of the syscall behind one socket I/O. */
struct mm_io_args {
	__u64 buf;  /* buffer, iovec array or msghdr */
	__u64 cnt;  /* iovcnt for MM_IO_IOV */
	__u32 kind; /* enum mm_io */
	__u32 _pad;
};

/*
 * An upstream response read while no request was pending: its request's
 * send tracepoint may not have run yet (response_done(), capture.bpf.h's
 * held_after()). Its status, bytes and end (last_resp_ns) stay in the
 * connection until a write or a read decides.
 */
enum mm_resp_held {
	MM_HELD_NO = 0,
	/* set by the parse; capture_io() then takes the socket's write_seq */
	MM_HELD_NEW = 1,
	/* the next writes may be the request it answers (held_after()) */
	MM_HELD_WAIT = 2,
};

enum mm_h2_state {
	MM_H2_NO = 0,
	MM_H2_FEED = 1, /* HTTP/2: every byte goes up to the decoder */
	MM_H2_DEAD = 2, /* HTTP/2, but its feed lost bytes: ignored */
	MM_H2_LATE = 3, /* HTTP/2 joined mid-connection: fed, not from start */
};

/* One MM_EVT_H2_DATA event being built (per CPU, too big for the stack). */
struct mm_h2_rec {
	char raw[sizeof(struct mm_data_event) + MM_DATA_CHUNK];
};

/* A request's content, as the proxy forwards it: links the two legs. */
struct mm_recent_key {
	__u32 tgid;
	__u8 method;
	__u8 _pad[3];
	__u64 host_hash;
	__u64 path_hash;
};

/* One slot of mm_recent: a downstream request's content and its link. */
struct mm_recent_slot {
	struct mm_recent_key k;
	__u64 tag; /* hash of k: a slot half-written by another CPU
			  * (key of one request, link of another) fails it */
	__u64 conn_id;
	__u32 seq;
	__u32 route_gen;
	__u32 route_id;
	__u16 rule_idx;
	__u16 lport; /* listener port the request was attributed in */
};

/* A route decision remembered by what decided it (mm_route_cache). */
struct mm_route_memo {
	__u64 host_hash;
	__u64 path_hash;
	__u32 gen;
	__u32 route_id; /* or MM_ROUTE_DEFER / MM_ROUTE_UNMATCHED */
	__u16 rule_idx;
	__u8 method;
	__u8 valid;
	__u8 gw;
	__u8 _pad;
	__u16 lport;
};

/* The downstream request a thread is serving, inherited by upstream legs. */
struct mm_link {
	__u64 conn_id;
	__u32 seq;
	__u32 route_gen;
	__u32 route_id;
	__u16 rule_idx;
	__u8 valid;
	__u8 _pad;
};

enum mm_pstate {
	PS_START = 0,  /* between messages */
	PS_METHOD,     /* request line: method token */
	PS_TARGET,     /* request line: path */
	PS_QUERY,      /* request line: after '?' */
	PS_VERSION,    /* request line: " HTTP/1.x" up to LF */
	PS_SVERSION,   /* status line: "HTTP/1.x" */
	PS_SCODE,      /* status line: three digits */
	PS_SREASON,    /* status line: reason up to LF */
	PS_LINE,       /* start of a header line */
	PS_NAME,       /* header name */
	PS_VALUE,      /* header value up to LF */
	PS_END_LF,     /* CR of the empty line seen */
	PS_BODY,       /* Content-Length body: skipped, not read */
	PS_CSIZE,      /* chunk size line */
	PS_CEXT,       /* chunk extension up to LF */
	PS_CDATA,      /* chunk data: skipped */
	PS_CDATA_END,  /* CRLF after chunk data */
	PS_TLINE,      /* trailer line start */
	PS_TREST,      /* trailer line rest */
	PS_TEND_LF,    /* CR of the final empty line seen */
	PS_CLOSE_BODY, /* response body delimited by close: skipped */
	PS_OPAQUE,     /* not HTTP (or upgraded): stop parsing this stream */
	PS_RESYNC, /* first seen mid-message: skip to the exchange's next turn */
};

enum mm_hdr {
	HDR_OTHER = 0,
	HDR_HOST,
	HDR_CL,
	HDR_TE,
	HDR_UPGRADE, /* its value in te_tail: "h2c" asks for HTTP/2 */
};

/* Parser of one byte stream (requests, or responses) of a connection. */
struct mm_parser {
	__u8 state; /* enum mm_pstate */
	__u8 hdr;   /* enum mm_hdr of the current header line */
	__u8 name_len;
	__u8 tok_len; /* method or status digits so far */
	__u8 chunked; /* Transfer-Encoding ends with "chunked" */
	__u8 has_cl;
	__u8 cl_bad;
	__u8 resynced; /* PS_RESYNC was used: the next garbage is final */
	__u8 up_h2c;   /* this message has "Upgrade: h2c" */
	char name[MM_NAME_MAX]; /* written through a mask of 32: see PS_NAME */
	__u8 _pad[3];
	__u64 tok;     /* method bytes / status code being read */
	__u64 rem;     /* body or chunk bytes left */
	__u64 cl;      /* Content-Length value */
	__u64 te_tail; /* last 8 lower-cased bytes of Transfer-Encoding */
};

_Static_assert(sizeof(struct mm_parser) == 64, "mm_parser: one cache line");
_Static_assert(__builtin_offsetof(struct mm_parser, name) + 32 <=
		       sizeof(struct mm_parser),
	       "mm_parser: a name index masked to 32 stays inside");

/* One request awaiting its response. */
struct mm_pending {
	__u64 start_ns;
	__u64 req_bytes;
	__u64 parent_conn_id;
	__u32 seq;
	__u32 parent_seq;
	__u32 route_gen;
	__u32 route_id;
	__u16 rule_idx;
	__u8 method;
	__u8 flags;     /* MM_EV_* known at request time */
	__u8 head_done; /* head parsed: route decided */
	__u8 _pad[3];
};

_Static_assert(sizeof(struct mm_pending) == 48, "mm_pending: no hole");

/*
 * A request past the pipeline depth: its start and route are kept, by
 * request number, for up to another MM_PIPELINE_DEPTH of them.
 */
struct mm_overflow {
	__u64 start_ns;
	__u32 seq;
	__u32 route_gen;
	__u32 route_id;
	__u16 rule_idx;
	__u8 method;
	__u8 valid;
};

#define MM_ROLE_UNKNOWN 0
#define MM_ROLE_DOWN    1 /* accepted: the proxy reads requests */
#define MM_ROLE_UP      2 /* connected: the proxy writes requests */

/*
 * What the request head being parsed has said about its route so far:
 * needed only until that head ends, nearly always in the read it starts
 * in. It lives in the per-CPU mm_scratch while an I/O is parsed and, for
 * a head that spans reads, in mm_route_accs between them
 * (route_acc.bpf.h): in every socket's state it took 288 of 776 bytes.
 */
struct mm_route_acc {
	__u64 path_hash;
	__u64 host_hash;
	__u64 bounds[MM_PATH_PREFIXES];
	__u8 nbounds;
	__u8 host_len;
	__u8 host_state; /* 0 name, 1 port (ignored), 2 done, 3 too long */
	__u8 ndots;
	__u8 target_ok; /* origin-form target ("/...") */
	__u8 dots_over; /* the host had more dots than dots[] holds */
	__u8 lost;      /* kept nowhere between reads: user space decides */
	__u8 _pad;
	__u8 dots[MM_DOTS_MAX];
	char host[MM_HOST_MAX];
};

/*
 * One per tracked socket, in its socket storage: with the storage
 * element's 72-byte header (and 8 more where it comes from bpf_mem_alloc)
 * it must stay within a 512-byte kmalloc object.
 */
struct mm_conn {
	__u64 conn_id;
	__u64 finished_ns;
	__u64 connect_ns;   /* upstream: when connect() started */
	__u64 last_resp_ns; /* time of the last response byte seen */
	__u64 resp_bytes;   /* of the front exchange */
	__u32 tgid;         /* process that owns the socket (events name it) */
	__u32 next_seq;
	__u32 ovf_front; /* request number of the oldest untracked request */
	/* resp_held: the socket's write_seq when the response was read */
	__u32 held_wseq;
	__u16 status; /* of the front exchange (final) */
	__u8 role;
	__u8 resp_started; /* a response byte of the front exchange seen */
	__u8 finished;     /* closed: pending requests reported, I/O ignored */
	__u8 gw;           /* gateway slot of tgid (struct mm_target) */
	__u8 head;         /* pipeline index of the oldest request */
	__u8 count;        /* requests in the pipeline */
	__u8 untracked;    /* requests past MM_PIPELINE_DEPTH not timed */
	__u8 bind_valid;   /* bind set at connect() for the first request */
	__u8 lazy;         /* first seen mid-stream, not at accept/connect */
	__u8 established;  /* upstream: connect() completed */
	__u8 h2;           /* enum mm_h2_state */
	__u8 h2_tries;     /* found open: I/Os looked at for HTTP/2 frames */
	__u8 head_trunc;
	__u8 xhead;  /* mm_conn_ext: ring index of the oldest middle request */
	__u8 xcount; /* mm_conn_ext: middle requests (count - MM_SLOTS_INLINE) */
	__u8 has_ext;  /* an mm_conn_exts entry was made for conn_id */
	__u8 head_gap; /* bytes of this head's earlier windows were not kept */
	__u8 ra_saved; /* the head's mm_route_acc waits in mm_route_accs */
	__u16 head_len;
	__u8 ra_held;   /* an mm_route_accs entry was made for conn_id */
	__u8 resp_held; /* enum mm_resp_held */
	union {
		struct {
			/* listener port of an accepted socket (mm_listeners),
			 * 0: every one */
			__u16 lport;
			/*
			 * Upstream, the bpf_loop build: 1 while a request
			 * write is parsed (another CPU can read its response
			 * meanwhile), and 1 while a response read then waits
			 * for that parse to end (busy_hold()).
			 */
			__u8 req_busy;
			__u8 _pad2;
			__u32 busy_held;
		};
		/* busy_held taken by a 64-bit atomic (busy_take()): 32-bit
		 * atomics need clang's -mcpu=v3 */
		__u64 busy_word;
	};
	struct mm_link bind;
	struct mm_parser req;
	struct mm_parser resp;
	/*
	 * The oldest requests and the newest, in a ring of MM_SLOTS_INLINE
	 * (pipeline.bpf.h); the ones between, when more are in flight, in
	 * struct mm_conn_ext.
	 */
	struct mm_pending slots[MM_SLOTS_INLINE];
};

#define MM_CONN_OFF(f) __builtin_offsetof(struct mm_conn, f)
_Static_assert(MM_CONN_OFF(busy_word) % 8 == 0 &&
		       MM_CONN_OFF(req_busy) == MM_CONN_OFF(busy_word) + 2 &&
		       MM_CONN_OFF(busy_held) == MM_CONN_OFF(busy_word) + 4,
	       "mm_conn: busy_word's bytes as MM_BUSY_REQ/MM_BUSY_HELD say");
#undef MM_CONN_OFF
_Static_assert(sizeof(struct mm_conn) + 72 + 8 <= 512,
	       "mm_conn: a 512-byte kmalloc object with its storage header");

/*
 * What a connection needs beyond its mm_conn now and then, made the first
 * time it does (mm_conn_exts, by conn_id): a pipeline deeper than
 * MM_SLOTS_INLINE, or a request head that spans windows and may have to go
 * to user space whole (head_copy.bpf.h). Nearly every connection has one
 * request in flight and its head in one read; a state sized for the rest
 * made every tracked socket carry 3 KiB it never touched.
 */
struct mm_conn_ext {
	char headbuf[MM_HEAD_MAX]; /* first: head_copy.bpf.h's offset + size bound */
	struct mm_pending slots[MM_PIPELINE_DEPTH]; /* middle requests, a ring */
	/* untracked, by request number */
	struct mm_overflow ovf[MM_PIPELINE_DEPTH];
};

/*
 * What every bpf_loop callback gets, on the caller's stack: pointers only,
 * which no callback changes. What the loops accumulate lives in the per-CPU
 * struct mm_scratch (below), never on the stack: the 6.1 verifier walks a
 * callback once and then treats stack slots the callback wrote as if it had
 * run once (fixed in 6.7), so a branch after the loop on such a value can be
 * pruned as dead; map memory is never tracked as a constant. Small frames
 * also keep program + callbacks under 6.1's 512-byte combined stack limit.
 */
struct mm_lctx {
	struct mm_conn *c;
	struct mm_parser *p;
	struct mm_scratch *s;
};

/* struct iovec of 64-bit user space (x86-64, arm64) */
struct mm_iovec {
	__u64 base;
	__u64 len;
};

/*
 * Per-CPU working memory of one program run. The TCP state hook, which may
 * interrupt a parse on the same CPU (softirq), never touches it.
 */
struct mm_scratch {
	char buf[MM_SCRATCH];   /* user bytes of the window being parsed */
	struct mm_route_acc ra; /* of the request head being parsed (this I/O) */
	/* window loop (one user buffer) */
	__u64 w_ubuf;
	__u64 now;
	__u32 w_len;
	__u32 w_off;
	__u8 is_req;
	/* block loop (buf[0, b_n)) */
	__u8 b_ev;    /* enum mm_bev */
	__u8 io_read; /* capture hooks -> mm_sock_io/mm_fb_io: a read */
	__u8 _pad0;
	__u32 b_n;
	__u32 b_pos;
	__u32 b_used;
	/*
	 * The socket of the I/O being parsed (struct sock *, 0: none), its
	 * key in mm_conns / mm_tls_conns: mm_sys_exit passes it to mm_fb_io,
	 * the bounded build's loop bodies find the connection again by it,
	 * and a held response is ordered by its write_seq.
	 */
	__u64 io_sk;
	__u32 wseq; /* the socket's write_seq, read by held_after() */
	__u32 _pad1;
	/* iovec loop */
	__u64 x_iov;
	__u64 x_left;
	__u64 x_cnt;
	struct mm_iovec x_vec[MM_IOV_BATCH]; /* iovecs read in one probe read */
	/* route lookup (route_lookup.bpf.h) */
	__u64 sfx_hash; /* FNV of the host suffix being hashed */
	__u32 sfx_from;
	__u32 vh_found; /* a wildcard vhost matched: vh_id, vh_flags */
	__u32 vh_id;
	__u32 vh_flags;
	__u32 rl_gen;
	__u32 rl_vhost;
	__u32 rl_route_id;
	__u16 rl_rule_idx;
	__u8 rl_method;
	__u8 rl_verdict;
	__u16 rl_lport; /* listener port of the lookup (mm_vhost_key) */
};

#endif /* MM_CONN_BPF_H */
