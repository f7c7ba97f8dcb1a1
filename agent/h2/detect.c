// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "agent/h2/detect.h"
#include "agent/h2/frame.h"

static const char *find_crlfcrlf(const char *b, size_t len)
{
	for (size_t i = 0; i + 4 <= len; i++)
		if (!memcmp(b + i, "\r\n\r\n", 4))
			return b + i;
	return NULL;
}

/* Does the comma-separated header value hold this token (any case)? */
static bool has_token(const char *v, size_t n, const char *tok)
{
	size_t tl = strlen(tok), i = 0;

	while (i < n) {
		size_t s, e;

		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		s = i;
		while (i < n && v[i] != ',')
			i++;
		e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e - s == tl && !strncasecmp(v + s, tok, tl))
			return true;
	}
	return false;
}

static void copy(char *dst, size_t cap, const char *s, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = 0;
}

/* Walk header lines: name, value (trimmed) for each. */
typedef void (*hdr_fn)(void *ctx, const char *name, size_t nl, const char *val,
		       size_t vl);

static void each_header(const char *line, const char *end, hdr_fn fn, void *ctx)
{
	while (line < end) {
		const char *eol = memchr(line, '\r', end - line);
		const char *colon;

		if (!eol)
			eol = end;
		colon = memchr(line, ':', eol - line);
		if (colon) {
			const char *v = colon + 1, *ve = eol;

			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			fn(ctx, line, colon - line, v, ve - v);
		}
		line = eol + 2;
	}
}

struct up_scan {
	bool upgrade_h2c, conn_upgrade, conn_settings;
	int settings;
	struct h2_upgrade_head *up;
};

static void up_hdr(void *ctx, const char *n, size_t nl, const char *v,
		   size_t vl)
{
	struct up_scan *u = ctx;

	if (nl == 7 && !strncasecmp(n, "upgrade", 7))
		u->upgrade_h2c |= has_token(v, vl, "h2c");
	else if (nl == 10 && !strncasecmp(n, "connection", 10)) {
		u->conn_upgrade |= has_token(v, vl, "upgrade");
		u->conn_settings |= has_token(v, vl, "http2-settings");
	} else if (nl == 14 && !strncasecmp(n, "http2-settings", 14))
		u->settings++;
	else if (nl == 4 && !strncasecmp(n, "host", 4) && u->up)
		copy(u->up->authority, sizeof(u->up->authority), v, vl);
	else if (nl == 14 && !strncasecmp(n, "content-length", 14) && u->up) {
		long long x = 0;

		for (size_t i = 0; i < vl && x >= 0; i++)
			x = v[i] >= '0' && v[i] <= '9' && x < (1LL << 50)
				    ? x * 10 + (v[i] - '0')
				    : -1;
		u->up->body_len = vl ? x : -1;
	} else if (nl == 17 && !strncasecmp(n, "transfer-encoding", 17) &&
		   u->up)
		u->up->body_len = -1;
}

enum h2_detect h2_detect__client(const uint8_t *buf, size_t len,
				 struct h2_upgrade_head *up)
{
	const char *b = (const char *)buf, *end, *sp1, *sp2, *eol;
	struct up_scan u = { .up = up };

	if (len < H2_PREFACE_LEN && !memcmp(b, H2_PREFACE, len))
		return H2_DETECT_MORE;
	if (len >= H2_PREFACE_LEN && !memcmp(b, H2_PREFACE, H2_PREFACE_LEN))
		return H2_DETECT_PREFACE;
	end = find_crlfcrlf(b, len);
	if (!end)
		return H2_DETECT_NO; /* the HTTP/1 path waits for whole heads */
	eol = memchr(b, '\r', end - b + 2);
	sp1 = memchr(b, ' ', eol - b);
	sp2 = sp1 ? memchr(sp1 + 1, ' ', eol - sp1 - 1) : NULL;
	if (!sp1 || !sp2 || eol - sp2 - 1 != 8 ||
	    memcmp(sp2 + 1, "HTTP/1.1", 8))
		return H2_DETECT_NO;
	if (up) {
		memset(up, 0, sizeof(*up));
		copy(up->method, sizeof(up->method), b, sp1 - b);
		copy(up->path, sizeof(up->path), sp1 + 1, sp2 - sp1 - 1);
		up->head_len = end + 4 - b;
	}
	each_header(eol + 2, end + 2, up_hdr, &u);
	/* RFC 7540 §3.2.1: exactly one HTTP2-Settings, named in Connection */
	if (u.upgrade_h2c && u.conn_upgrade && u.conn_settings &&
	    u.settings == 1)
		return H2_DETECT_UPGRADE;
	return H2_DETECT_NO;
}

struct sw_scan {
	bool h2c, conn_upgrade;
};

static void sw_hdr(void *ctx, const char *n, size_t nl, const char *v,
		   size_t vl)
{
	struct sw_scan *s = ctx;

	if (nl == 7 && !strncasecmp(n, "upgrade", 7))
		s->h2c |= has_token(v, vl, "h2c");
	else if (nl == 10 && !strncasecmp(n, "connection", 10))
		s->conn_upgrade |= has_token(v, vl, "upgrade");
}

long h2_detect__switched(const uint8_t *buf, size_t len)
{
	const char *b = (const char *)buf, *end, *eol;
	struct sw_scan s = {};

	if (len < 12)
		return memcmp(b, "HTTP/1.1 101", len) ? -1 : 0;
	if (memcmp(b, "HTTP/1.1 101", 12))
		return -1;
	end = find_crlfcrlf(b, len);
	if (!end)
		return 0;
	eol = memchr(b, '\r', end - b + 2);
	each_header(eol + 2, end + 2, sw_hdr, &s);
	return s.h2c && s.conn_upgrade ? end + 4 - b : -1;
}
