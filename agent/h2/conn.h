/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One HTTP/2 connection seen from outside (a proxy's socket): both
 * directions' bytes in order, each fed in chunks split anywhere with the
 * time the chunk was captured. Streams are followed from the client's
 * HEADERS to the server's END_STREAM (or RST_STREAM, GOAWAY, close), and each
 * finished or aborted stream is handed to a callback as an exchange with the
 * fields the HTTP/1 path counts (agent/pipeline/exchange.h) plus the
 * strings user space matches routes on. No libbpf: the capture layer calls
 * this with the bytes it sends up.
 */
#ifndef MM_AGENT_H2_CONN_H
#define MM_AGENT_H2_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum h2_dir {
	H2_FROM_CLIENT = 0, /* the side that sent the preface / opens streams */
	H2_FROM_SERVER = 1,
};

/* Fields the decoder could not know (pre-attach HPACK references, lost blocks). */
#define H2_UNK_METHOD    0x01
#define H2_UNK_PATH      0x02
#define H2_UNK_AUTHORITY 0x04
#define H2_UNK_STATUS    0x08
#define H2_UNK_GRPC      0x10
#define H2_UNK_OTHER     0x20 /* some other field: content-length, scheme */

#define H2_GRPC_NONE (-1) /* no grpc-status: not gRPC or no trailers */

struct h2_exchange {
	uint32_t stream_id;
	uint8_t method;      /* enum mm_method (MM_M_OTHER when unknown) */
	uint8_t flags;       /* MM_EV_* as for HTTP/1 */
	uint16_t status;     /* final :status; 0 when none or unknown */
	uint32_t unknown;    /* H2_UNK_* */
	uint32_t rst_code;   /* RST_STREAM / GOAWAY error code when aborted */
	int32_t grpc_status; /* H2_GRPC_NONE or 0..16 */
	int64_t content_length; /* response content-length, -1 absent */
	uint64_t start_ns;      /* first byte of the request HEADERS */
	uint64_t end_ns;        /* last byte of the response, or abort time */
	uint64_t req_bytes;  /* frame bytes of this stream, client -> server */
	uint64_t resp_bytes; /* frame bytes of this stream, server -> client */
	/* NUL-terminated, valid during the callback; "" when absent or unknown */
	const char *method_str;
	const char *path;
	/* the host routes match (":authority", else "host") */
	const char *authority;
	const char *scheme;
	/*
	 * The other request fields as HTTP/1 header lines ("name: value\r\n"),
	 * for routes' header matches; headers_trunc: some may be missing
	 * (past H2_HDRS_MAX, or fields HPACK could not resolve).
	 */
	const char *headers;
	bool headers_trunc;
};

#define H2_HDRS_MAX 1024

typedef void (*h2_exchange_fn)(void *ctx, const struct h2_exchange *ex);

/* A request that upgraded to h2c (RFC 7540 §3.2): it is stream 1. */
struct h2_upgrade_req {
	const char *method;
	const char *path;
	const char *authority;
	uint64_t start_ns;
	uint64_t req_bytes;
};

struct h2_conn_opts {
	/*
	 * true: both directions are seen from their first byte (the client's
	 * preface is checked, HPACK starts empty). false: the agent attached to
	 * an open connection; each direction's next chunk starts at a frame
	 * boundary, and HPACK references older than the attach are unknown.
	 */
	bool from_start;
	const struct h2_upgrade_req *upgrade; /* h2c upgrade: stream 1 */
	h2_exchange_fn on_exchange;
	void *ctx;
};

struct h2_conn_stats {
	uint64_t frames[2];
	uint64_t exchanges;
	uint64_t aborted;
	uint64_t untracked_streams;  /* streams opened before the attach */
	uint64_t streams_over_limit; /* past H2_MAX_STREAMS open at once */
	uint64_t push_promises;
	uint64_t unknown_fields; /* HPACK fields from before the attach */
	uint64_t hpack_errors;
	uint64_t lost_blocks; /* header blocks lost or too large */
	/* SETTINGS_HEADER_TABLE_SIZE each side sent */
	uint32_t header_table_size[2];
	uint32_t settings[2]; /* SETTINGS frames (acks excluded) */
};

#define H2_MAX_STREAMS 4096

struct h2_conn;

struct h2_conn *h2_conn__new(const struct h2_conn_opts *o);
/* Ends every open stream as aborted (connection closed) and frees. */
void h2_conn__free(struct h2_conn *c, uint64_t close_ns);
/* Returns 0, or -EPROTO when the bytes are not HTTP/2 (then ignored). */
int h2_conn__feed(struct h2_conn *c, enum h2_dir dir, const void *data,
		  size_t len, uint64_t ts_ns);
/*
 * Bytes of this direction were lost (ring buffer full, truncated capture):
 * the next chunk starts at a frame boundary; HPACK of this direction starts
 * counting afresh, so nothing after the loss resolves to a wrong value.
 */
void h2_conn__lost(struct h2_conn *c, enum h2_dir dir);
void h2_conn__stats(const struct h2_conn *c, struct h2_conn_stats *st);

#endif /* MM_AGENT_H2_CONN_H */
