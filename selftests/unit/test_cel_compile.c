// SPDX-License-Identifier: Apache-2.0
/*
 * CEL compile errors (with columns), variable scoping, limits that keep a
 * hostile expression from exhausting the stack, and a fuzz loop.
 */
#include <stdlib.h>

#include "selftests/unit/test_cel_helpers.h"

/*
 * Compile error message and column must be exactly these; the caller shows
 * them as "column N: message".
 */
#define COMPILE_ERR(expr, vars, want, wcol)                                    \
	do {                                                                   \
		struct cel_error _e;                                           \
		struct cel_program *_p = cel__compile(expr, vars, &_e);        \
		if (_p) {                                                      \
			cel__free(_p);                                         \
			test__fail(__FILE__, __LINE__, "%s compiled", expr);   \
			return;                                                \
		}                                                              \
		ASSERT_STREQ(_e.msg, want);                                    \
		ASSERT_EQ(_e.col, wcol);                                       \
	} while (0)

TEST(cel_compile_errors_name_the_column)
{
	struct cel_error e;

	COMPILE_ERR("valu", CEL_VAR_VALUE,
		    "undeclared reference to 'valu' (did you mean 'value'?)",
		    1);
	COMPILE_ERR(
		"value * atributes", CEL_ALL_VARS,
		"undeclared reference to 'atributes' (did you mean 'attributes'?)",
		9);
	COMPILE_ERR(
		"foo", CEL_VAR_VALUE | CEL_VAR_ATTRIBUTES,
		"undeclared reference to 'foo' (available: value, attributes)",
		1);
	COMPILE_ERR(
		"item.type", CEL_VAR_VALUE | CEL_VAR_ATTRIBUTES,
		"'item' is not available in this expression (available: value, attributes)",
		1);
	COMPILE_ERR("value +", CEL_VAR_VALUE,
		    "unexpected token end of expression", 8);
	COMPILE_ERR("(1 + 2))", 0, "unexpected token ')'", 8);
	COMPILE_ERR("f(1, 2", 0,
		    "expected ',' or ')' but found end of expression", 7);
	COMPILE_ERR("", 0, "unexpected token end of expression", 1);
	COMPILE_ERR("1 = 1", 0, "unexpected '='; use '==' to compare", 3);
	COMPILE_ERR("a.", CEL_ALL_VARS, "expected a field name after '.'", 3);
	COMPILE_ERR(
		"true ? 1", 0,
		"expected ':' of the conditional but found end of expression",
		9);
	COMPILE_ERR("value / 1000", CEL_VAR_VALUE,
		    "no matching overload for '_/_' applied to '(double, int)'",
		    7);
	COMPILE_ERR("foo(1)", 0, "undeclared function 'foo'", 1);
	COMPILE_ERR("size(1, 2)", 0, "'size' takes 1 argument, got 2", 1);
	COMPILE_ERR("'a'.startsWith()", 0,
		    "'startsWith' takes 1 argument, got 0", 5);
	COMPILE_ERR("'a'.int()", 0, "'int' is not a method; call it as int(x)",
		    5);
	COMPILE_ERR("startsWith('a', 'b')", 0,
		    "'startsWith' is a method; call it as x.startsWith(...)",
		    1);
	COMPILE_ERR(
		"[1, 2].exists(x, x > 1)", 0,
		"the 'exists' macro is not supported by milometer's CEL subset",
		8);
	COMPILE_ERR(
		"resource.if + namespace", CEL_VAR_RESOURCE,
		"'namespace' is a reserved word and cannot be used as a name",
		15);
	COMPILE_ERR("if", 0,
		    "'if' is a reserved word and cannot be used as a name", 1);
	COMPILE_ERR("'\xc3\xa9' + 1", 0,
		    "no matching overload for '_+_' applied to '(string, int)'",
		    5);
	COMPILE_ERR("'a' + 'b' + 1", 0,
		    "no matching overload for '_+_' applied to '(string, int)'",
		    11);
	COMPILE_ERR("[1] + [2] + 3", 0,
		    "no matching overload for '_+_' applied to '(list, int)'",
		    11);
	COMPILE_ERR("1 # 2", 0, "unexpected character '#'", 3);
	/* the error struct is optional */
	ASSERT_TRUE(!cel__compile("1 +", 0, NULL));
	ASSERT_TRUE(!cel__compile(NULL, 0, &e));
}

TEST(cel_source_and_eval_without_err)
{
	struct cel_program *p =
		cel__compile("value * 2.0", CEL_VAR_VALUE, NULL);
	struct cel_activation act = { .value = 4 };
	struct cel_value v;

	ASSERT_TRUE(p);
	ASSERT_STREQ(cel__source(p), "value * 2.0");
	ASSERT_EQ(cel__eval(p, &act, &v, NULL), 0);
	ASSERT_NEAR(v.d, 8, 0);
	/* evaluating repeatedly gives the same answer; results are per call */
	act.value = 5;
	ASSERT_EQ(cel__eval(p, &act, &v, NULL), 0);
	ASSERT_NEAR(v.d, 10, 0);
	cel__free(p);
	p = cel__compile("resource.x", CEL_VAR_RESOURCE, NULL);
	ASSERT_TRUE(p);
	ASSERT_EQ(cel__eval(p, NULL, &v, NULL), -EINVAL);
	cel__free(p);
	ASSERT_EQ(cel__eval(NULL, &act, &v, NULL), -EINVAL);
}

TEST(cel_eval_errors_name_the_column)
{
	static const char y[] = "metadata: {name: a}\n";
	struct cel_program *p;
	struct cel_activation act = { 0 };
	struct cel_error e;
	struct doc_file *f;
	struct cel_value v;
	char err[128];

	ASSERT_EQ(doc__parse_buf("y", y, strlen(y), &f, err, sizeof(err)), 0);
	act.resource = f->docs[0];
	p = cel__compile("resource.metadata.missing", CEL_VAR_RESOURCE, &e);
	ASSERT_TRUE(p);
	ASSERT_EQ(cel__eval(p, &act, &v, &e), -EINVAL);
	ASSERT_STREQ(e.msg, "no such key: missing");
	ASSERT_EQ(e.col, 19);
	cel__free(p);
	p = cel__compile("1 + (2 / (resource.metadata.name == 'a' ? 0 : 1))",
			 CEL_VAR_RESOURCE, &e);
	ASSERT_TRUE(p);
	ASSERT_EQ(cel__eval(p, &act, &v, &e), -EINVAL);
	ASSERT_STREQ(e.msg, "division by zero");
	ASSERT_EQ(e.col, 8);
	cel__free(p);
	doc__free_file(f);
}

static char *repeat(const char *pre, const char *mid, const char *post, int n)
{
	size_t lp = strlen(pre), lm = strlen(mid), lq = strlen(post), i;
	char *s = malloc(lp * n + lm + lq * n + 1), *o = s;

	for (i = 0; i < (size_t)n; i++, o += lp)
		memcpy(o, pre, lp);
	memcpy(o, mid, lm);
	o += lm;
	for (i = 0; i < (size_t)n; i++, o += lq)
		memcpy(o, post, lq);
	*o = 0;
	return s;
}

static int try_compile(const char *expr, char *msg, size_t len)
{
	struct cel_error e;
	struct cel_program *p = cel__compile(expr, CEL_ALL_VARS, &e);

	if (p) {
		struct cel_value v;
		struct cel_activation act = { .value = 1 };
		int r = cel__eval(p, &act, &v, &e);

		cel__free(p);
		snprintf(msg, len, "%s", r ? e.msg : "");
		return r ? 2 : 0;
	}
	snprintf(msg, len, "%s", e.msg);
	return 1;
}

TEST(cel_limits_fail_cleanly)
{
	char msg[256], *s;
	int r;

	/* cel-spec asks for at least 32 levels/repetitions of each rule */
	s = repeat("(", "1", ")", 32);
	ASSERT_EQ(try_compile(s, msg, sizeof(msg)), 0);
	free(s);
	s = repeat("[", "1", "][0]", 30);
	ASSERT_EQ(try_compile(s, msg, sizeof(msg)), 0);
	free(s);
	s = repeat("false || ", "true", "", 32);
	ASSERT_EQ(try_compile(s, msg, sizeof(msg)), 0);
	free(s);
	s = repeat("1 + ", "1", "", 150);
	ASSERT_EQ(try_compile(s, msg, sizeof(msg)), 0);
	free(s);

	s = repeat("(", "1", ")", 30000);
	r = try_compile(s, msg, sizeof(msg));
	ASSERT_EQ(r, 1);
	ASSERT_TRUE(strstr(msg, "nests too deeply"), "%s", msg);
	free(s);
	s = repeat("(", "1", ")", 100000);
	ASSERT_EQ(try_compile(s, msg, sizeof(msg)), 1);
	ASSERT_TRUE(strstr(msg, "longer than"), "%s", msg);
	free(s);
	s = repeat("(", "", "", 65536);
	ASSERT_EQ(try_compile(s, msg, sizeof(msg)), 1);
	ASSERT_TRUE(strstr(msg, "nests too deeply"), "%s", msg);
	free(s);
	s = repeat("[", "", "", 60000);
	ASSERT_EQ(try_compile(s, msg, sizeof(msg)), 1);
	free(s);
	s = repeat("-", "1", "", 60000);
	ASSERT_EQ(try_compile(s, msg, sizeof(msg)), 1);
	ASSERT_TRUE(strstr(msg, "nests too deeply"), "%s", msg);
	free(s);
	s = repeat("!", "true", "", 60000);
	ASSERT_EQ(try_compile(s, msg, sizeof(msg)), 1);
	free(s);
	s = repeat("1 + ", "1", "", 10000);
	ASSERT_EQ(try_compile(s, msg, sizeof(msg)), 1);
	ASSERT_TRUE(strstr(msg, "nests too deeply"), "%s", msg);
	free(s);
	s = repeat("", "resource", ".a", 10000);
	ASSERT_EQ(try_compile(s, msg, sizeof(msg)), 1);
	free(s);
	s = repeat("true ? 1 : ", "2", "", 10000);
	ASSERT_EQ(try_compile(s, msg, sizeof(msg)), 1);
	free(s);
	/* long but flat is fine; longer than 64 KiB is refused */
	s = repeat("", "[", "1, ", 20000);
	strcpy(s + strlen(s) - 2, "]");
	ASSERT_EQ(try_compile(s, msg, sizeof(msg)), 0);
	free(s);
	s = repeat("", "'", "a", 70000);
	ASSERT_EQ(try_compile(s, msg, sizeof(msg)), 1);
	ASSERT_TRUE(strstr(msg, "longer than 65536"), "%s", msg);
	free(s);
}

TEST(cel_result_too_large_is_an_error)
{
	struct cel_activation act = { 0 };
	char msg[256];
	char *s;

	s = repeat("(", "'abcdefghijklmnop'", " + 'x') + ('y' + 'z')", 1);
	ASSERT_EQ(cel_test_run(s, 0, &act, msg, sizeof(msg)), 0);
	free(s);
	ASSERT_EQ(cel_test_run("[0,1,2,3,4,5,6,7,8,9] + [0,1,2,3,4,5,6,7,8,9]",
			       0, &act, msg, sizeof(msg)),
		  0);
	s = repeat("string(", "'0123456789abcdef0123456789abcdef'",
		   ") + string(1)", 1);
	ASSERT_EQ(cel_test_run(s, 0, &act, msg, sizeof(msg)), 0);
	free(s);
	{
		struct cel_program *p = cel__compile(
			"attributes.a + attributes.a + attributes.a + attributes.a",
			CEL_VAR_ATTRIBUTES, NULL);
		static char big[300000];
		struct cel_attr at = { "a", big };
		struct cel_error e;
		struct cel_value v;

		memset(big, 'x', sizeof(big) - 1);
		act.attrs = &at;
		act.nattrs = 1;
		ASSERT_TRUE(p);
		ASSERT_EQ(cel__eval(p, &act, &v, &e), -EINVAL);
		ASSERT_TRUE(strstr(e.msg, "expression result too large"), "%s",
			    e.msg);
		big[10] = 0;
		ASSERT_EQ(cel__eval(p, &act, &v, &e), 0);
		ASSERT_EQ(v.str.len, 40);
		cel__free(p);
	}
}

/*
 * Random token soup: compile and evaluate must never crash (run under
 * ASan/UBSan to make this meaningful).
 */
TEST(cel_fuzz_token_soup)
{
	static const char *const vocab[] = {
		"(",          ")",          "[",       "]",
		"{",          "}",          ".",       ",",
		":",          "?",          "+",       "-",
		"*",          "/",          "%",       "!",
		"==",         "!=",         "<",       "<=",
		">",          ">=",         "&&",      "||",
		"in",         "1",          "0",       "-1",
		"2u",         "1.5",        "0.0",     "'a'",
		"b'b'",       "true",       "null",    "value",
		"attributes", "resource",   "item",    "size",
		"has",        "int",        "string",  "double",
		"timestamp",  "duration",   "matches", "'^a'",
		"metadata",   "name",       "x",       "'2024-01-01T00:00:00Z'",
		"'1s'",       "startsWith", "type",    "9223372036854775807",
		"\"",         "'",          "r'",      "\\",
		"0x",         "1e",
	};
	const size_t nv = sizeof(vocab) / sizeof(vocab[0]);
	char err[256], yaml[] = "metadata: {name: a, x: [1, 2]}\n";
	struct doc_file *f;
	struct cel_attr at = { "x", "y" };
	unsigned seed = 12345, compiled = 0, evaluated = 0;
	char expr[512];
	int i, j, r;

	ASSERT_EQ(doc__parse_buf("f", yaml, strlen(yaml), &f, err, sizeof(err)),
		  0);
	struct cel_activation act = { .value = 2,
				      .attrs = &at,
				      .nattrs = 1,
				      .resource = f->docs[0],
				      .item = f->docs[0] };
	for (i = 0; i < 20000; i++) {
		size_t off = 0;
		int n = 1 + rand_r(&seed) % 12;

		for (j = 0; j < n; j++)
			off += snprintf(expr + off, sizeof(expr) - off, "%s ",
					vocab[rand_r(&seed) % nv]);
		r = cel_test_run(expr, CEL_ALL_VARS, &act, err, sizeof(err));
		compiled += r != 1;
		evaluated += r == 0;
	}
	test_log("fuzz: 20000 expressions, %u compiled, %u evaluated\n",
		 compiled, evaluated);
	ASSERT_TRUE(compiled > 100);

	/* byte-level mutations of valid expressions reach the lexer's corners */
	static const char *const seeds[] = {
		"item.status == 'True' ? 1 : 0",
		"string(resource.metadata.name) + \"/\" + r'x\\y'",
		"timestamp('2024-01-01T00:00:00.5+01:00') - duration('1h2m3.5s')",
		"[1, 2u, 3.5e-3, b'\\377', '\\u00e9'].size() > 0x1F",
		"has(resource.metadata.x) || attributes['x'].matches('^a+$')",
		"{'a': [value / 1000.0, -9223372036854775808]}['a'][1] % 7",
		"'''multi\nline''' + \"\"\"q\"\"\"",
	};
	static const char bytes[] =
		"()[]{}.,:?+-*/%!=<>&|'\"\\ruxbe0189_aZ\n\xc3\xff";
	compiled = evaluated = 0;
	for (i = 0; i < 20000; i++) {
		const char *sd = seeds[rand_r(&seed) %
				       (sizeof(seeds) / sizeof(seeds[0]))];
		size_t len = strlen(sd), k;
		int muts = 1 + rand_r(&seed) % 3;

		memcpy(expr, sd, len + 1);
		for (j = 0; j < muts && len; j++) {
			k = rand_r(&seed) % len;
			switch (rand_r(&seed) % 3) {
			case 0: /* replace */
				expr[k] = bytes[rand_r(&seed) %
						(sizeof(bytes) - 1)];
				break;
			case 1: /* delete */
				memmove(expr + k, expr + k + 1, len - k);
				len--;
				break;
			default: /* truncate */
				expr[k] = 0;
				len = k;
				break;
			}
		}
		r = cel_test_run(expr, CEL_ALL_VARS, &act, err, sizeof(err));
		compiled += r != 1;
		evaluated += r == 0;
	}
	test_log("mutations: 20000 expressions, %u compiled, %u evaluated\n",
		 compiled, evaluated);
	ASSERT_TRUE(compiled > 1000);
	doc__free_file(f);
}
