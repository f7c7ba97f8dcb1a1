// SPDX-License-Identifier: Apache-2.0
/* JSON output: see json_out.h. */
#include <math.h>

#include "policy/util/json_out.h"
#include "policy/util/utf8.h"

/* RFC 8259 section 7: quotation mark, reverse solidus, control characters. */
static const char *json_escape(unsigned char c, char buf[8], void *ctx)
{
	(void)ctx;
	switch (c) {
	case '"':
		return "\\\"";
	case '\\':
		return "\\\\";
	case '\n':
		return "\\n";
	case '\r':
		return "\\r";
	case '\t':
		return "\\t";
	}
	if (c >= 0x20 && c != 0x7f)
		return NULL;
	snprintf(buf, 8, "\\u%04x", c);
	return buf;
}

void json_out__str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	utf8__write_escaped(f, s, json_escape, NULL);
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
	else if (fabs(v) < 9007199254740992.0 && v == (double)(long long)v)
		fprintf(f, "%lld", (long long)v);
	else
		fprintf(f, "%.17g", v);
}
