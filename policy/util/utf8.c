// SPDX-License-Identifier: Apache-2.0
/* Writing text as valid UTF-8: see utf8.h. */
#include "policy/util/utf8.h"

void utf8__write_escaped(FILE *f, const char *s, utf8_escape_fn esc, void *ctx)
{
	const unsigned char *p = (const unsigned char *)s;
	char buf[8];

	while (*p) {
		size_t n = utf8__seq_len(p);
		const char *rep;

		if (!n) {
			fputs("\xef\xbf\xbd", f); /* U+FFFD */
			p++;
			continue;
		}
		rep = n == 1 ? esc(*p, buf, ctx) : NULL;
		if (rep)
			fputs(rep, f);
		else
			fwrite(p, 1, n, f);
		p += n;
	}
}
