// SPDX-License-Identifier: Apache-2.0
/* OTEL_EXPORTER_OTLP_HEADERS parsing and redaction; see otlp_headers.h. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "exporter/otlp_headers.h"

/* The headers the sender sets itself; replacing them breaks the protocol. */
static const char *const reserved[] = {
	"content-type", "content-length",    "content-encoding",
	"host",         "transfer-encoding", "expect",
};

static bool is_tchar(int c)
{
	return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static void trim(const char **s, const char **e)
{
	while (*s < *e && isspace((unsigned char)**s))
		(*s)++;
	while (*e > *s && isspace((unsigned char)(*e)[-1]))
		(*e)--;
}

/* Percent-decode [s, e) into out; -1 on a bad escape or a control byte. */
static int decode_value(const char *s, const char *e, char *out)
{
	char *o = out;

	for (; s < e; s++) {
		int c = (unsigned char)*s;

		if (c == '%') {
			int hi;

			if (e - s < 3)
				return -1;
			hi = hexval(s[1]);
			if (hi < 0 || hexval(s[2]) < 0)
				return -1;
			c = hi * 16 + hexval(s[2]);
			s += 2;
		}
		/* CR/LF/NUL would split or end the header line. */
		if (c == '\r' || c == '\n' || c == 0)
			return -1;
		*o++ = (char)c;
	}
	*o = 0;
	return 0;
}

static int add_one(struct otlp_headers *h, const char *ks, const char *ke,
		   const char *vs, const char *ve, const char *origin,
		   char *err, size_t errlen)
{
	size_t klen = ke - ks, i;
	char **lines;
	size_t *nl;
	char *line;

	for (i = 0; i < klen; i++)
		if (!is_tchar((unsigned char)ks[i]))
			break;
	if (!klen || i < klen) {
		snprintf(err, errlen,
			 "%s: header name \"%.*s\" is not a valid "
			 "HTTP field name; write k1=v1,k2=v2",
			 origin, (int)klen, ks);
		return -EINVAL;
	}
	for (i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		if (strlen(reserved[i]) == klen &&
		    !strncasecmp(reserved[i], ks, klen)) {
			snprintf(err, errlen,
				 "%s: header \"%.*s\" is set by the "
				 "OTLP exporter itself; remove it",
				 origin, (int)klen, ks);
			return -EINVAL;
		}
	}
	line = malloc(klen + 2 + (ve - vs) + 1);
	if (!line)
		return -ENOMEM;
	memcpy(line, ks, klen);
	memcpy(line + klen, ": ", 2);
	if (decode_value(vs, ve, line + klen + 2) < 0) {
		free(line);
		snprintf(err, errlen,
			 "%s: the value of header \"%.*s\" has a "
			 "bad %%-escape or a control character",
			 origin, (int)klen, ks);
		return -EINVAL;
	}
	lines = realloc(h->lines, (h->n + 1) * sizeof(*lines));
	if (!lines) {
		free(line);
		return -ENOMEM;
	}
	h->lines = lines;
	nl = realloc(h->namelen, (h->n + 1) * sizeof(*nl));
	if (!nl) {
		free(line);
		return -ENOMEM;
	}
	h->namelen = nl;
	h->lines[h->n] = line;
	h->namelen[h->n] = klen;
	h->n++;
	return 0;
}

int otlp_headers__parse(struct otlp_headers *h, const char *spec,
			const char *origin, char *err, size_t errlen)
{
	const char *p = spec;

	if (!spec)
		return 0;
	while (*p) {
		const char *end = strchr(p, ',');
		const char *eq, *ks = p, *ke, *vs, *ve;
		int ret;

		if (!end)
			end = p + strlen(p);
		eq = memchr(p, '=', end - p);
		ke = eq ? eq : end;
		trim(&ks, &ke);
		if (!eq) {
			/* Empty members (",,", trailing ",") are tolerated. */
			if (ks != ke) {
				snprintf(err, errlen,
					 "%s: \"%.*s\" has no '='; "
					 "write k1=v1,k2=v2",
					 origin, (int)(ke - ks), ks);
				return -EINVAL;
			}
		} else {
			vs = eq + 1;
			ve = end;
			trim(&vs, &ve);
			ret = add_one(h, ks, ke, vs, ve, origin, err, errlen);
			if (ret)
				return ret;
		}
		p = *end ? end + 1 : end;
	}
	return 0;
}

void otlp_headers__free(struct otlp_headers *h)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		free(h->lines[i]);
	free(h->lines);
	free(h->namelen);
	*h = (struct otlp_headers){};
}

static bool is_secret(const struct otlp_headers *h, const char *line,
		      size_t klen)
{
	size_t i;

	if ((klen == 13 && !strncasecmp(line, "authorization", 13)) ||
	    (klen == 19 && !strncasecmp(line, "proxy-authorization", 19)))
		return true;
	for (i = 0; h && i < h->n; i++)
		if (h->namelen[i] == klen &&
		    !strncasecmp(h->lines[i], line, klen))
			return true;
	return false;
}

size_t otlp_headers__redact(const struct otlp_headers *h, const char *text,
			    size_t len, char *out, size_t outlen)
{
	static const char mark[] = " [redacted]";
	const char *p = text, *end = text + len;
	size_t o = 0;

	if (!outlen)
		return 0;
#define PUT(src, n)                                                            \
	do {                                                                   \
		size_t _n = (n);                                               \
		if (_n > outlen - 1 - o)                                       \
			_n = outlen - 1 - o;                                   \
		memcpy(out + o, (src), _n);                                    \
		o += _n;                                                       \
	} while (0)
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		const char *le = nl ? nl + 1 : end;
		const char *colon = memchr(p, ':', le - p);

		if (colon && colon > p && is_secret(h, p, colon - p)) {
			const char *eol = le;

			/* keep the line ending, drop the value */
			while (eol > colon + 1 &&
			       (eol[-1] == '\n' || eol[-1] == '\r'))
				eol--;
			PUT(p, colon + 1 - p);
			PUT(mark, sizeof(mark) - 1);
			PUT(eol, le - eol);
		} else {
			PUT(p, le - p);
		}
		p = le;
	}
#undef PUT
	out[o] = 0;
	return o;
}
