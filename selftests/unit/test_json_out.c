// SPDX-License-Identifier: Apache-2.0
/*
 * policy/util/json_out.c: escaping per RFC 8259, invalid UTF-8, numbers JSON
 * cannot carry; the output is parsed back by Python's json module (a parser
 * the tree does not contain) and must decode to the expected strings.
 */
#include <math.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "policy/util/json_out.h"
#include "selftests/unit/test.h"

static char *emit(void (*fn)(FILE *, const void *), const void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fn(f, arg);
	fclose(f);
	return buf;
}

static void emit_str(FILE *f, const void *s)
{
	json_out__str(f, s);
}

static void emit_double(FILE *f, const void *v)
{
	json_out__double(f, *(const double *)v);
}

TEST(json_out_escapes)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{ "plain", "\"plain\"" },
		{ "a\"b\\c", "\"a\\\"b\\\\c\"" },
		{ "l1\nl2\r\t", "\"l1\\nl2\\r\\t\"" },
		{ "\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"" },
		{ "caf\xc3\xa9", "\"caf\xc3\xa9\"" }, /* valid UTF-8 kept */
		{ "bad\xff\xc3",
		  "\"bad\xef\xbf\xbd\xef\xbf\xbd\"" }, /* U+FFFD */
		{ "\xed\xa0\x80",
		  "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"" }, /* surrogate */
		{ "", "\"\"" },
	};
	char *out;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		out = emit(emit_str, cases[i].in);
		ASSERT_STREQ(out, cases[i].want);
		free(out);
	}
	out = emit(emit_str, NULL);
	ASSERT_STREQ(out, "null");
	free(out);
}

TEST(json_out_numbers)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{ 3, "3" },
		{ -2, "-2" },
		{ 1.5, "1.5" },
		{ 0.1, "0.10000000000000001" },
		{ NAN, "null" },
		{ INFINITY, "null" },
		{ -INFINITY, "null" },
		{ 1e300, "1.0000000000000001e+300" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = emit(emit_double, &cases[i].v);

		ASSERT_STREQ(out, cases[i].want);
		free(out);
	}
}

/* A document with every awkward character parses with a real parser. */
TEST(json_out_parsed_by_python)
{
	static const char py[] =
		"import json,sys\n"
		"d = json.load(open(sys.argv[1], encoding='utf-8'))\n"
		"assert d['k\"ey'] == 'v\\\\al\\n\\x01\\u00e9\\ufffd', "
		"repr(d)\n"
		"assert d['n'] is None and d['x'] == 0.5, repr(d)\n";
	char path[512], cmd[1200];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/out.json", test__tmpdir());
	f = fopen(path, "w");
	if (!ASSERT_TRUE(f != NULL))
		return;
	fputc('{', f);
	json_out__key(f, "k\"ey");
	json_out__str(f, "v\\al\n\x01\xc3\xa9\xfe");
	fputc(',', f);
	json_out__key(f, "n");
	json_out__double(f, NAN);
	fputc(',', f);
	json_out__key(f, "x");
	json_out__double(f, 0.5);
	fputs("}\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/python3 -c \"$(cat <<'EOF'\n%s\nEOF\n)\" %s >&2", py,
		 path);
	rc = system(cmd);
	ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0,
		    "python3 json rejected %s", path);
}
