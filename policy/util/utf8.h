/* SPDX-License-Identifier: Apache-2.0 */
/* UTF-8 validation shared by the text writers (Prometheus, JSON). */
#ifndef MM_EXPORTER_UTF8_H
#define MM_EXPORTER_UTF8_H

#include <stddef.h>
#include <stdio.h>

/*
 * Length of the valid UTF-8 sequence at s (1..4), 0 if invalid: overlong
 * forms, surrogates and code points past U+10FFFF are invalid (RFC 3629).
 * s must be NUL-terminated (a NUL ends a sequence as invalid).
 */
static inline size_t utf8__seq_len(const unsigned char *s)
{
	unsigned int c = s[0], cp, n, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

/*
 * What to write for the ASCII byte c (NULL: c itself); buf has room for
 * an escape of up to 7 characters.
 */
typedef const char *(*utf8_escape_fn)(unsigned char c, char buf[8], void *ctx);

/*
 * Write s as valid UTF-8: invalid bytes become U+FFFD, ASCII bytes go
 * through esc (the one loop behind the Prometheus and JSON writers).
 */
void utf8__write_escaped(FILE *f, const char *s, utf8_escape_fn esc, void *ctx);

#endif /* MM_EXPORTER_UTF8_H */
