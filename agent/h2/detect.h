/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Is a connection HTTP/2? From the client's first bytes: the connection
 * preface (prior knowledge, RFC 9113 §3.3; also h2 over TLS after ALPN), or
 * an HTTP/1.1 request asking to upgrade (`Upgrade: h2c` with one
 * `HTTP2-Settings`, RFC 7540 §3.2); from the server's first bytes: the
 * `101 Switching Protocols` that accepts it. After a 101 the server's
 * bytes that follow its head are HTTP/2 frames and the upgraded request is
 * stream 1 (h2_conn_opts.upgrade).
 */
#ifndef MM_AGENT_H2_DETECT_H
#define MM_AGENT_H2_DETECT_H

#include <stddef.h>
#include <stdint.h>

enum h2_detect {
	H2_DETECT_NO = 0,  /* not HTTP/2 and not an upgrade request */
	H2_DETECT_MORE,    /* a prefix of the preface: need more bytes */
	H2_DETECT_PREFACE, /* prior knowledge / ALPN h2 */
	H2_DETECT_UPGRADE, /* HTTP/1.1 request with Upgrade: h2c */
};

struct h2_upgrade_head {
	char method[16];
	char path[1024];
	char authority[256];
	size_t head_len; /* bytes of the request head (through CRLFCRLF) */
	/*
	 * Content-Length of the request: RFC 7540 §3.2 has the client send the
	 * whole body in HTTP/1.1 before the switch, so HTTP/2 (the client's
	 * preface) starts head_len + body_len bytes in. -1: a chunked body
	 * (its end is the HTTP/1 parser's business).
	 */
	long long body_len;
};

/* Client's first bytes; for H2_DETECT_UPGRADE fills *up when non-NULL. */
enum h2_detect h2_detect__client(const uint8_t *buf, size_t len,
				 struct h2_upgrade_head *up);
/*
 * Server's first bytes after an upgrade request: the length of a complete
 * "101" head that switches to h2c, 0 when the head is not complete yet, or
 * -1 when the server answered otherwise (the connection stays HTTP/1.1).
 */
long h2_detect__switched(const uint8_t *buf, size_t len);

#endif /* MM_AGENT_H2_DETECT_H */
