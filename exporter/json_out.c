// SPDX-License-Identifier: Apache-2.0
/* JSON output: see json_out.h. */
#include <math.h>

#include "exporter/json_out.h"
#include "exporter/utf8.h"

void json_out__str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	while (*p) {
		size_t n = utf8__seq_len(p);

		if (!n) {
			fputs("\xef\xbf\xbd", f);
			p++;
			continue;
		}
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else
				fwrite(p, 1, n, f);
		}
		p += n;
	}
	fputc('"', f);
}

void json_out__key(FILE *f, const char *key)
{
	json_out__str(f, key);
	fputc(':', f);
}

void json_out__double(FILE *f, double v)
{
	if (!isfinite(v))
		fputs("null", f);
	else if (v == (double)(long long)v && fabs(v) < 9007199254740992.0)
		fprintf(f, "%lld", (long long)v);
	else
		fprintf(f, "%.17g", v);
}
