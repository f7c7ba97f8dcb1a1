/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Route lookup in user space on a compiled route table.
 *
 * route_match__lookup() first replays what the BPF data path does with the
 * map entries (vhost by exact host, wildcard suffixes longest first,
 * catch-all; Exact list; defer on regex/deep vhosts; Prefix lists longest
 * first; first candidate whose method fits decides unless it needs user
 * space), so `milometer explain` shows what the kernel's table does. Where
 * BPF would defer, it finishes by walking the vhost's full precedence list
 * with header, query and regex matches. It also walks that list when BPF
 * decided and fails with -EPROTO if the answers differ: the compiled keys
 * must never disagree with the Gateway API order they were cut from.
 *
 * route_match__parse_head() turns a raw HTTP/1.x request head, as BPF
 * captured it (possibly cut at MM_HEAD_MAX), into a struct http_req that
 * points into the buffer.
 */
#ifndef MM_POLICY_ROUTE_MATCH_H
#define MM_POLICY_ROUTE_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/gateway/route_compile.h"

#define HTTP_REQ_MAX_HEADERS 64

struct http_header {
	const char *name;
	size_t name_len;
	const char *value; /* without surrounding whitespace */
	size_t value_len;
};

/* Borrowed pointers, not NUL-terminated: use the lengths. */
struct http_req {
	uint8_t method;   /* enum mm_method */
	const char *host; /* Host header (or absolute-form authority) */
	size_t host_len;
	const char *path; /* request target up to '?' */
	size_t path_len;
	const char *query; /* after '?', NULL when there is none */
	size_t query_len;
	struct http_header headers[HTTP_REQ_MAX_HEADERS];
	size_t nheaders;
	bool truncated;     /* head ended before the blank line */
	bool absolute_form; /* target was http://host/...: BPF defers */
};

struct route_result {
	uint32_t route_id; /* MM_ROUTE_UNMATCHED when no rule matches */
	uint16_t rule_idx;
	uint16_t match_idx;
	int32_t vhost_id; /* -1: no virtual host for this Host */
	/* What the BPF program records in the event for this request. */
	uint32_t bpf_route_id; /* a route id, MM_ROUTE_DEFER or _UNMATCHED */
	uint16_t bpf_rule_idx;
	bool deferred;  /* bpf_route_id == MM_ROUTE_DEFER */
	char why[1024]; /* one line per step, '\n'-separated */
};

/*
 * gw: the gateway slot whose routes apply (0 with a one-Gateway table);
 * port: the listener port whose vhosts apply, as BPF keys them (0: every
 * listener of the slot; see struct mm_vhost_key).
 */
int route_match__lookup(const struct route_table *t, uint32_t gw, uint32_t port,
			const struct http_req *req, struct route_result *res);

/*
 * For a deferred BPF event: parse head[0, len) and look it up. When the
 * head was cut (truncated, or parse says -ENODATA) before the request line
 * or a Host header was read, the answer is MM_ROUTE_UNKNOWN rather than a
 * guess; a complete head without Host (HTTP/1.0) goes to the catch-all.
 * Likewise MM_ROUTE_UNKNOWN when the head is cut and a match ranking above
 * the answer failed only on a header that may have been in the lost part.
 * Returns 0, or -EINVAL when head is not an HTTP/1.x request.
 */
int route_match__lookup_head(const struct route_table *t, uint32_t gw,
			     uint32_t port, const char *head, size_t len,
			     bool truncated, struct route_result *res);

/*
 * 0 when the request line and Host were read (headers up to where the
 * buffer ends); -EINVAL when buf does not start with an HTTP/1.x request
 * line, -ENODATA when it is cut before the end of the request line.
 */
int route_match__parse_head(const char *buf, size_t len, struct http_req *req);

/*
 * Host normalised as BPF hashes it: lower-cased, ":port" and a trailing
 * '.' removed. Returns the length written (truncated to outlen - 1).
 */
size_t route_match__norm_host(const char *host, size_t len, char *out,
			      size_t outlen);

/* Does one precedence-list entry match the request (path, method,
 * headers, query)? */
bool route_match__entry_matches(const struct rc_entry *e,
				const struct http_req *req);

/* Does path match PathPrefix `prefix` element-wise (prefix normalised)? */
bool route_match__prefix_matches(const char *prefix, size_t prefix_len,
				 const char *path, size_t path_len);

#endif /* MM_POLICY_ROUTE_MATCH_H */
