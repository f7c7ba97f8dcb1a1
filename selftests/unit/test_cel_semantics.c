// SPDX-License-Identifier: Apache-2.0
/*
 * CEL semantics, case by case after cel-spec's conformance files
 * (tests/simple/testdata: basic, integer_math, fp_math, string, logic,
 * comparisons, macros, conversions, timestamps), plus the bindings milometer
 * adds: value, attributes, resource and item.
 */
#include <math.h>
#include <stdlib.h>

#include "selftests/unit/test_cel_helpers.h"

static const char fixture_yaml[] =
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: HTTPRoute\n"
	"metadata:\n"
	"  name: web\n"
	"  namespace: prod\n"
	"  uid: \"8a1b2c3d-0000-4000-8000-000000000001\"\n"
	"  creationTimestamp: \"2009-02-13T23:31:30Z\"\n"
	"  deletionTimestamp: \"2024-01-01T00:00:00Z\"\n"
	"  generation: 3\n"
	"  labels:\n"
	"    app: shop\n"
	"    tier: \"1\"\n"
	"spec:\n"
	"  weights: [10, 20, 30]\n"
	"  ratio: 0.25\n"
	"  enabled: true\n"
	"  nothing: null\n"
	"status:\n"
	"  conditions:\n"
	"  - type: Accepted\n"
	"    status: \"True\"\n"
	"    reason: Accepted\n"
	"  - type: ResolvedRefs\n"
	"    status: \"False\"\n"
	"    reason: BackendNotFound\n"
	"---\n"
	"metadata:\n"
	"  name: alive\n"
	"---\n"
	"metadata:\n"
	"  name: explicit-null\n"
	"  deletionTimestamp: null\n";

static const struct cel_attr fixture_attrs[] = {
	{ "k8s.gateway.name", "public-gw" },
	{ "envoy.cluster_name", "prod/web/80" },
	{ "pattern", "^prod/" },
};

struct fixture {
	struct doc_file *f;
	struct cel_activation act;
};

static int fixture_open(struct fixture *fx)
{
	char err[256];
	int r;

	memset(fx, 0, sizeof(*fx));
	r = doc__parse_buf("fixture.yaml", fixture_yaml, strlen(fixture_yaml),
			   &fx->f, err, sizeof(err));
	if (r) {
		test__fail(__FILE__, __LINE__, "fixture: %s", err);
		return r;
	}
	fx->act.value = 1500;
	fx->act.attrs = fixture_attrs;
	fx->act.nattrs = 3;
	fx->act.resource = fx->f->docs[0];
	fx->act.item =
		doc__path(fx->f->docs[0], "status.conditions")->list.items[0];
	return 0;
}

#define FIXTURE(fx)                                                            \
	struct fixture fx;                                                     \
	if (fixture_open(&fx))                                                 \
	return

TEST(cel_literals)
{
	FIXTURE(fx);
	const struct cel_activation *a = &fx.act;

	CEL_EXPECT(a, "1", "int:1");
	CEL_EXPECT(a, "0x1F", "int:31");
	CEL_EXPECT(a, "1u", "uint:1");
	CEL_EXPECT(a, "0x10u", "uint:16");
	CEL_EXPECT(a, "18446744073709551615u", "uint:18446744073709551615");
	CEL_EXPECT(a, "9223372036854775807", "int:9223372036854775807");
	CEL_EXPECT(a, "-9223372036854775808", "int:-9223372036854775808");
	CEL_EXPECT(a, "1.5", "double:1.5");
	CEL_EXPECT(a, "1e3", "double:1000");
	CEL_EXPECT(a, ".5", "double:0.5");
	CEL_EXPECT(a, "-2.5e-3", "double:-0.0025");
	CEL_EXPECT(a, "true", "bool:true");
	CEL_EXPECT(a, "null", "null");
	CEL_EXPECT(a, "'abc'", "string:abc");
	CEL_EXPECT(a, "\"a\\tb\"", "string:a\tb");
	CEL_EXPECT(a, "r'a\\tb'", "string:a\\tb");
	CEL_EXPECT(a, "R\"\\\\\"", "string:\\\\");
	CEL_EXPECT(a, "'\"\"'", "string:\"\"");
	CEL_EXPECT(a, "'''x''x'''", "string:x''x");
	CEL_EXPECT(a, "\"\"\"two\nlines\"\"\"", "string:two\nlines");
	CEL_EXPECT(a, "'\\u00e9\\U0001F600'",
		   "string:\xc3\xa9\xf0\x9f\x98\x80");
	/* octal and \x in strings are code points, in bytes they are octets */
	CEL_EXPECT(a, "'\\303\\277'", "string:\xc3\x83\xc2\xbf");
	CEL_EXPECT(a, "b'\\303\\277'", "bytes:\xc3\xbf");
	CEL_EXPECT(a, "'\\xFF'", "string:\xc3\xbf");
	CEL_EXPECT(a, "size(b'\\xFF')", "int:1");
	CEL_EXPECT(a, "size(b'\xc3\xbf')", "int:2");
	CEL_EXPECT(a, "size('\xc3\xbf')", "int:1");
	CEL_EXPECT(a, "[1, 'a', 2.5, ]", "list:[int:1, string:a, double:2.5]");
	CEL_EXPECT(a, "{'a': 1, 2: true}",
		   "map:{string:a: int:1, int:2: bool:true}");
	CEL_EXPECT(a, "[]", "list:[]");
	CEL_EXPECT(a, "{}", "map:{}");
	CEL_EXPECT(a, "1 // a comment\n + 2", "int:3");
	CEL_EXPECT_ERR(a, "9223372036854775808", 1,
		       "integer literal out of range");
	CEL_EXPECT_ERR(a, "18446744073709551616u", 1, "out of range");
	CEL_EXPECT_ERR(a, "'abc", 1, "unterminated string");
	CEL_EXPECT_ERR(a, "'a\nb'", 1, "newline in string");
	CEL_EXPECT_ERR(a, "'\\q'", 1, "invalid escape");
	CEL_EXPECT_ERR(a, "b'\\u00e9'", 1, "not allowed in bytes");
	CEL_EXPECT_ERR(a, "'\\ud800'", 1, "not a valid Unicode");
	CEL_EXPECT_ERR(a, "{1.5: 1}", 1, "unsupported map key type double");
	CEL_EXPECT_ERR(a, "{'a': 1, 'a': 2}", 2, "repeated map key");
	doc__free_file(fx.f);
}

TEST(cel_integer_and_double_math)
{
	FIXTURE(fx);
	const struct cel_activation *a = &fx.act;

	CEL_EXPECT(a, "1 + 2 * 3", "int:7");
	CEL_EXPECT(a, "(1 + 2) * 3", "int:9");
	CEL_EXPECT(a, "7 / 2", "int:3");
	CEL_EXPECT(a, "-7 / 2", "int:-3");
	CEL_EXPECT(a, "7 % 3", "int:1");
	CEL_EXPECT(a, "-7 % 3", "int:-1");
	CEL_EXPECT(a, "--5", "int:5");
	CEL_EXPECT(a, "7u / 2u", "uint:3");
	CEL_EXPECT(a, "7u % 4u", "uint:3");
	CEL_EXPECT(a, "2.0 / 4.0", "double:0.5");
	CEL_EXPECT(a, "0.1 + 0.2", "double:0.30000000000000004");
	CEL_EXPECT(a, "1.0 / 0.0", "double:+Inf");
	CEL_EXPECT(a, "-1.0 / 0.0", "double:-Inf");
	CEL_EXPECT(a, "0.0 / 0.0", "double:NaN");
	CEL_EXPECT(a, "-(1.5)", "double:-1.5");
	CEL_EXPECT_ERR(a, "1 / 0", 2, "division by zero");
	CEL_EXPECT_ERR(a, "1 % 0", 2, "modulus by zero");
	CEL_EXPECT_ERR(a, "1u / 0u", 2, "division by zero");
	CEL_EXPECT_ERR(a, "9223372036854775807 + 1", 2, "integer overflow");
	CEL_EXPECT_ERR(a, "-9223372036854775808 - 1", 2, "integer overflow");
	CEL_EXPECT_ERR(a, "4611686018427387904 * 2", 2, "integer overflow");
	CEL_EXPECT_ERR(a, "-9223372036854775808 / -1", 2, "integer overflow");
	CEL_EXPECT_ERR(a, "-9223372036854775808 % -1", 2, "integer overflow");
	CEL_EXPECT_ERR(a, "-(-9223372036854775808)", 2, "integer overflow");
	CEL_EXPECT_ERR(a, "0u - 1u", 2, "unsigned integer overflow");
	CEL_EXPECT_ERR(a, "18446744073709551615u + 1u", 2, "overflow");
	/* no implicit conversions: caught by the checker when types are known */
	CEL_EXPECT_ERR(
		a, "1 + 1.0", 1,
		"no matching overload for '_+_' applied to '(int, double)'");
	CEL_EXPECT_ERR(a, "1 + 1u", 1, "no matching overload");
	CEL_EXPECT_ERR(a, "1.0 % 2.0", 1, "no matching overload for '_%_'");
	CEL_EXPECT_ERR(a, "-1u", 1, "no matching overload for '-_'");
	CEL_EXPECT_ERR(a, "'a' - 'b'", 1, "no matching overload");
	/* ...and at run time when they are not */
	CEL_EXPECT_ERR(
		a, "resource.metadata.generation + 1.0", 2,
		"no matching overload for '_+_' applied to '(int, double)'");
	CEL_EXPECT(a, "resource.metadata.generation * 2", "int:6");
	CEL_EXPECT(a, "resource.spec.ratio * 4.0", "double:1");
	doc__free_file(fx.f);
}

TEST(cel_strings_and_lists)
{
	FIXTURE(fx);
	const struct cel_activation *a = &fx.act;

	CEL_EXPECT(a, "'foo' + 'bar'", "string:foobar");
	CEL_EXPECT(a, "b'a' + b'b'", "bytes:ab");
	CEL_EXPECT(a,
		   "resource.metadata.namespace + '/' + resource.metadata.name",
		   "string:prod/web");
	CEL_EXPECT(a, "[1] + [2, 3]", "list:[int:1, int:2, int:3]");
	CEL_EXPECT(a, "resource.spec.weights + [40]",
		   "list:[int:10, int:20, int:30, int:40]");
	CEL_EXPECT(a, "size('h\xc3\xa9llo')", "int:5");
	CEL_EXPECT(a, "'hello'.size()", "int:5");
	CEL_EXPECT(a, "size([1, 2])", "int:2");
	CEL_EXPECT(a, "{'a': 1}.size()", "int:1");
	CEL_EXPECT(a, "size(resource.metadata.labels)", "int:2");
	CEL_EXPECT(a, "'hello'.startsWith('he')", "bool:true");
	CEL_EXPECT(a, "'hello'.startsWith('lo')", "bool:false");
	CEL_EXPECT(a, "'hello'.endsWith('lo')", "bool:true");
	CEL_EXPECT(a, "'hello'.contains('ell')", "bool:true");
	CEL_EXPECT(a, "'hello'.contains('')", "bool:true");
	CEL_EXPECT(a, "'he'.contains('hello')", "bool:false");
	CEL_EXPECT(a, "'abc123'.matches('^[a-z]+[0-9]+$')", "bool:true");
	CEL_EXPECT(a, "matches('xyz', 'y')", "bool:true");
	CEL_EXPECT(a, "'xyz'.matches('^y')", "bool:false");
	CEL_EXPECT(
		a,
		"attributes['envoy.cluster_name'].matches(attributes.pattern)",
		"bool:true");
	CEL_EXPECT_ERR(a, "'a'.matches('(')", 1, "invalid regular expression");
	CEL_EXPECT_ERR(a, "'a'.matches(attributes['k8s.gateway.name'] + '(')",
		       2, "invalid regular expression");
	/* fuzz_cel: formatting a double past int64 converted it first (UB) */
	CEL_EXPECT(a, "string(4e44)", "string:4e+44");
	CEL_EXPECT(a, "string(-1e300)", "string:-1e+300");
	/* RE2 syntax (the CEL spec's), and its bounds */
	CEL_EXPECT(a, "'v12'.matches('^v\\\\d+$')", "bool:true");
	CEL_EXPECT(a, "'ABC'.matches('(?i)^abc$')", "bool:true");
	CEL_EXPECT_ERR(a, "'a'.matches('(.{0,255}){0,255}')", 1,
		       "invalid repetition size");
	CEL_EXPECT_ERR(
		a, "'a'.matches(attributes['k8s.gateway.name'] + '.{0,1000}')",
		2, "instructions, more than the limit");
	CEL_EXPECT_ERR(a, "size(1)", 1, "no matching overload for 'size'");
	CEL_EXPECT_ERR(a, "size(resource.metadata.generation)", 2,
		       "no matching overload for 'size' applied to '(int)'");
	doc__free_file(fx.f);
}

TEST(cel_comparisons)
{
	FIXTURE(fx);
	const struct cel_activation *a = &fx.act;

	CEL_EXPECT(a, "1 < 2", "bool:true");
	CEL_EXPECT(a, "2 <= 2", "bool:true");
	CEL_EXPECT(a, "2u > 3u", "bool:false");
	CEL_EXPECT(a, "'a' < 'b'", "bool:true");
	CEL_EXPECT(a, "'ab' > 'a'", "bool:true");
	CEL_EXPECT(a, "b'a' < b'b'", "bool:true");
	CEL_EXPECT(a, "false < true", "bool:true");
	/* heterogeneous numeric equality and ordering (current cel-spec) */
	CEL_EXPECT(a, "1 == 1.0", "bool:true");
	CEL_EXPECT(a, "1u == 1", "bool:true");
	CEL_EXPECT(a, "1 < 1.5", "bool:true");
	CEL_EXPECT(a, "-1 < 0u", "bool:true");
	CEL_EXPECT(a, "18446744073709551615u > 9223372036854775807",
		   "bool:true");
	CEL_EXPECT(a, "9007199254740993 == 9007199254740992.0", "bool:false");
	CEL_EXPECT(a, "9007199254740993 > 9007199254740992.0", "bool:true");
	CEL_EXPECT(a, "-9007199254740993 < -9007199254740992.0", "bool:true");
	CEL_EXPECT(a, "2.5 > 2", "bool:true");
	CEL_EXPECT(a, "-2.5 < -2", "bool:true");
	CEL_EXPECT(a, "2u < 2.5", "bool:true");
	CEL_EXPECT(a, "9223372036854775807 < 9223372036854775808.0",
		   "bool:true");
	CEL_EXPECT(a, "-9223372036854775808 == -9223372036854775808.0",
		   "bool:true");
	CEL_EXPECT(a, "18446744073709551615u < 18446744073709551616.0",
		   "bool:true");
	CEL_EXPECT(a, "0u > -0.5", "bool:true");
	CEL_EXPECT(a, "1 < 0.0 / 0.0", "bool:false");
	CEL_EXPECT(a, "1 == 'a'", "bool:false");
	CEL_EXPECT(a, "1 != 'a'", "bool:true");
	CEL_EXPECT(a, "null == null", "bool:true");
	CEL_EXPECT(a, "[1, 2] == [1, 2.0]", "bool:true");
	CEL_EXPECT(a, "[1, 2] == [2, 1]", "bool:false");
	CEL_EXPECT(a, "{'a': 1, 'b': 2} == {'b': 2, 'a': 1.0}", "bool:true");
	CEL_EXPECT(a, "resource.spec.weights == [10, 20, 30]", "bool:true");
	CEL_EXPECT(a, "0.0 / 0.0 == 0.0 / 0.0", "bool:false");
	CEL_EXPECT(a, "0.0 / 0.0 < 1.0", "bool:false");
	CEL_EXPECT(a, "0.0 / 0.0 >= 1.0", "bool:false");
	CEL_EXPECT(a, "1 in [1, 2]", "bool:true");
	CEL_EXPECT(a, "3 in [1, 2]", "bool:false");
	CEL_EXPECT(a, "2.0 in [1, 2]", "bool:true");
	CEL_EXPECT(a, "'k' in {'k': 1}", "bool:true");
	CEL_EXPECT(a, "20 in resource.spec.weights", "bool:true");
	CEL_EXPECT(a, "'app' in resource.metadata.labels", "bool:true");
	CEL_EXPECT(a, "'k8s.gateway.name' in attributes", "bool:true");
	CEL_EXPECT(a, "'nope' in attributes", "bool:false");
	CEL_EXPECT_ERR(a, "'a' < 1", 1, "no matching overload for '_<_'");
	CEL_EXPECT_ERR(a, "1 in 1", 1, "no matching overload for '@in'");
	CEL_EXPECT_ERR(
		a, "resource.metadata.name < 1", 2,
		"no matching overload for '_<_' applied to '(string, int)'");
	doc__free_file(fx.f);
}

TEST(cel_logic_absorbs_errors)
{
	FIXTURE(fx);
	const struct cel_activation *a = &fx.act;

	CEL_EXPECT(a, "true && false", "bool:false");
	CEL_EXPECT(a, "true || false", "bool:true");
	CEL_EXPECT(a, "!true", "bool:false");
	CEL_EXPECT(a, "!!true", "bool:true");
	CEL_EXPECT(a, "false && 1 / 0 == 1", "bool:false");
	CEL_EXPECT(a, "1 / 0 == 1 && false", "bool:false");
	CEL_EXPECT(a, "true || 1 / 0 == 1", "bool:true");
	CEL_EXPECT(a, "1 / 0 == 1 || true", "bool:true");
	CEL_EXPECT(a, "resource.metadata.nope == 1 || true", "bool:true");
	/* a non-bool operand is an error, absorbed the same way */
	CEL_EXPECT(a, "resource.metadata.generation && false", "bool:false");
	CEL_EXPECT_ERR(a, "1 / 0 == 1 && true", 2, "division by zero");
	CEL_EXPECT_ERR(a, "false || 1 / 0 == 1", 2, "division by zero");
	/* both sides fail: the left error is reported */
	CEL_EXPECT_ERR(a, "1 / 0 == 1 || resource.x == 1", 2,
		       "division by zero");
	CEL_EXPECT_ERR(a, "resource.metadata.generation && true", 2,
		       "no matching overload for '_&&_'");
	CEL_EXPECT_ERR(a, "1 && true", 1, "no matching overload for '_&&_'");
	CEL_EXPECT_ERR(a, "!1", 1, "no matching overload for '!_'");
	CEL_EXPECT(a, "true ? 1 : 2", "int:1");
	CEL_EXPECT(a, "false ? 1 : 2", "int:2");
	CEL_EXPECT(a, "true ? 1 : 1 / 0", "int:1");
	CEL_EXPECT(a, "false ? 1 : true ? 2 : 3", "int:2");
	CEL_EXPECT_ERR(a, "false ? 1 : 1 / 0", 2, "division by zero");
	CEL_EXPECT_ERR(a, "1 / 0 == 0 ? 1 : 2", 2, "division by zero");
	CEL_EXPECT_ERR(a, "1 ? 2 : 3", 1, "condition of '?:' must be bool");
	CEL_EXPECT_ERR(a, "resource.metadata.generation ? 2 : 3", 2,
		       "no matching overload for '_?_:_'");
	doc__free_file(fx.f);
}

TEST(cel_field_access_and_has)
{
	FIXTURE(fx);
	const struct cel_activation *a = &fx.act;

	CEL_EXPECT(a, "resource.metadata.name", "string:web");
	CEL_EXPECT(a, "resource['metadata']['labels']['app']", "string:shop");
	CEL_EXPECT(a, "resource.metadata.labels.tier", "string:1");
	CEL_EXPECT(a, "resource.spec.weights[1]", "int:20");
	CEL_EXPECT(a, "resource.spec.weights[2u]", "int:30");
	CEL_EXPECT(a, "resource.spec.enabled", "bool:true");
	CEL_EXPECT(a, "resource.spec.nothing", "null");
	CEL_EXPECT(a, "resource.status.conditions[1].reason",
		   "string:BackendNotFound");
	CEL_EXPECT(a, "[10, 20][0]", "int:10");
	CEL_EXPECT(a, "{'a': {'b': 5}}.a.b", "int:5");
	CEL_EXPECT(a, "{1: 'one'}[1.0]", "string:one");
	CEL_EXPECT_ERR(a, "resource.metadata.missing", 2,
		       "no such key: missing");
	CEL_EXPECT_ERR(a, "resource.metadata.labels['nope']", 2,
		       "no such key: nope");
	CEL_EXPECT_ERR(a, "resource.spec.weights[3]", 2,
		       "index out of range: 3");
	CEL_EXPECT_ERR(a, "resource.spec.weights[-1]", 2, "index out of range");
	CEL_EXPECT_ERR(a, "resource.spec.weights['a']", 2,
		       "no matching overload");
	/* a double index past int64's range is no index (no C overflow) */
	CEL_EXPECT_ERR(a, "[1][5e68]", 2, "no matching overload");
	CEL_EXPECT_ERR(a, "[1][-5e68]", 2, "no matching overload");
	CEL_EXPECT(a, "[10, 20][1.0]", "int:20");
	CEL_EXPECT_ERR(a, "resource.metadata.name.first", 2,
		       "type 'string' does not support field selection");
	CEL_EXPECT_ERR(a, "{1: 2}[3]", 2, "no such key: 3");
	CEL_EXPECT_ERR(a, "'abc'.x", 1, "does not support field selection");
	CEL_EXPECT(a, "has(resource.metadata.labels)", "bool:true");
	CEL_EXPECT(a, "has(resource.metadata.annotations)", "bool:false");
	CEL_EXPECT(a, "has(resource.spec.nothing)", "bool:true");
	CEL_EXPECT(a, "has({'a': 1}.a)", "bool:true");
	CEL_EXPECT(a, "has(attributes.pattern)", "bool:true");
	CEL_EXPECT(a, "has(attributes.nope)", "bool:false");
	CEL_EXPECT_ERR(a, "has(resource.nope.x)", 2, "no such key: nope");
	CEL_EXPECT_ERR(a, "has(resource.metadata.name.x)", 2,
		       "has() needs a map, got string");
	CEL_EXPECT_ERR(a, "has(resource)", 1,
		       "has() needs one field selection");
	CEL_EXPECT(a, "attributes['k8s.gateway.name']", "string:public-gw");
	CEL_EXPECT(a, "attributes.size()", "int:3");
	CEL_EXPECT_ERR(a, "attributes['missing']", 2, "no such key: missing");
	CEL_EXPECT_ERR(a, "attributes[1]", 2, "no such key: 1");
	doc__free_file(fx.f);
}

TEST(cel_conversions)
{
	FIXTURE(fx);
	const struct cel_activation *a = &fx.act;

	CEL_EXPECT(a, "string(1)", "string:1");
	CEL_EXPECT(a, "string(-1)", "string:-1");
	CEL_EXPECT(a, "string(18446744073709551615u)",
		   "string:18446744073709551615");
	CEL_EXPECT(a, "string(1.5)", "string:1.5");
	CEL_EXPECT(a, "string(1.0)", "string:1");
	CEL_EXPECT(a, "string(1e6)", "string:1e+06");
	CEL_EXPECT(a, "string(123456.0)", "string:123456");
	CEL_EXPECT(a, "string(0.0001)", "string:0.0001");
	CEL_EXPECT(a, "string(0.00001)", "string:1e-05");
	CEL_EXPECT(a, "string(0.1 + 0.2)", "string:0.30000000000000004");
	CEL_EXPECT(a, "string(1.0 / 3.0)", "string:0.3333333333333333");
	CEL_EXPECT(a, "string(-999999.0)", "string:-999999");
	CEL_EXPECT(a, "string(123456789.0)", "string:1.23456789e+08");
	CEL_EXPECT(a, "string(5e-324)", "string:5e-324");
	CEL_EXPECT(a, "string(1.7976931348623157e308)",
		   "string:1.7976931348623157e+308");
	CEL_EXPECT(a, "string(2.5e-5)", "string:2.5e-05");
	CEL_EXPECT(a, "string(100.125)", "string:100.125");
	CEL_EXPECT(a, "string(true)", "string:true");
	CEL_EXPECT(a, "string(b'abc')", "string:abc");
	CEL_EXPECT(a, "string('x')", "string:x");
	CEL_EXPECT(a, "string(resource.metadata.uid)",
		   "string:8a1b2c3d-0000-4000-8000-000000000001");
	CEL_EXPECT(a, "string(resource.metadata.generation)", "string:3");
	CEL_EXPECT_ERR(a, "string(b'\\xff')", 2, "not valid UTF-8");
	CEL_EXPECT_ERR(a, "string(null)", 1,
		       "no matching overload for 'string'");
	CEL_EXPECT_ERR(a, "string(resource.spec)", 2, "no matching overload");
	CEL_EXPECT(a, "int('42')", "int:42");
	CEL_EXPECT(a, "int('-42')", "int:-42");
	CEL_EXPECT(a, "int(1.9)", "int:1");
	CEL_EXPECT(a, "int(-1.9)", "int:-1");
	CEL_EXPECT(a, "int(42u)", "int:42");
	CEL_EXPECT(a, "int(resource.metadata.labels.tier) + 1", "int:2");
	CEL_EXPECT_ERR(a, "int('0x1')", 2, "cannot convert '0x1'");
	CEL_EXPECT_ERR(a, "int('')", 2, "cannot convert");
	CEL_EXPECT_ERR(a, "int('99999999999999999999')", 2, "cannot convert");
	CEL_EXPECT_ERR(a, "int(1e19)", 2, "out of range");
	CEL_EXPECT_ERR(a, "int(0.0 / 0.0)", 2, "out of range");
	CEL_EXPECT_ERR(a, "int(18446744073709551615u)", 2, "out of range");
	CEL_EXPECT(a, "uint(1.5)", "uint:1");
	CEL_EXPECT(a, "uint('7')", "uint:7");
	CEL_EXPECT(a, "uint(7)", "uint:7");
	CEL_EXPECT_ERR(a, "uint(-1)", 2, "out of range");
	CEL_EXPECT_ERR(a, "uint('-1')", 2, "cannot convert");
	CEL_EXPECT_ERR(a, "uint(-1.0)", 2, "out of range");
	CEL_EXPECT(a, "double(1)", "double:1");
	CEL_EXPECT(a, "double(2u)", "double:2");
	CEL_EXPECT(a, "double('1.5')", "double:1.5");
	CEL_EXPECT(a, "double('-1e3')", "double:-1000");
	CEL_EXPECT_ERR(a, "double('abc')", 2, "cannot convert 'abc'");
	CEL_EXPECT(a, "bytes('abc')", "bytes:abc");
	CEL_EXPECT(a, "bool('true')", "bool:true");
	CEL_EXPECT(a, "bool('f')", "bool:false");
	CEL_EXPECT_ERR(a, "bool('yes')", 2, "cannot convert 'yes'");
	CEL_EXPECT(a, "dyn(1) + 2", "int:3");
	CEL_EXPECT(a, "type(1)", "type:int");
	CEL_EXPECT(a, "type(1) == int", "bool:true");
	CEL_EXPECT(a, "type('a') == string", "bool:true");
	CEL_EXPECT(a, "type(resource.metadata) == map", "bool:true");
	CEL_EXPECT(a, "type(type(1)) == type", "bool:true");
	CEL_EXPECT(a, "type(null) == null_type", "bool:true");
	doc__free_file(fx.f);
}

TEST(cel_timestamps_and_durations)
{
	FIXTURE(fx);
	const struct cel_activation *a = &fx.act;

	CEL_EXPECT(a, "int(timestamp(resource.metadata.creationTimestamp))",
		   "int:1234567890");
	CEL_EXPECT(a, "double(int(timestamp('2009-02-13T23:31:30.9Z')))",
		   "double:1.23456789e+09");
	CEL_EXPECT(a, "int(timestamp('1969-12-31T23:59:59.5Z'))", "int:-1");
	CEL_EXPECT(a, "timestamp('2024-01-02T03:04:05Z')",
		   "timestamp:2024-01-02T03:04:05Z");
	CEL_EXPECT(a, "string(timestamp('2024-01-01T00:00:00.50Z'))",
		   "string:2024-01-01T00:00:00.5Z");
	CEL_EXPECT(
		a,
		"timestamp('2024-01-01T01:00:00+01:00') == timestamp('2024-01-01T00:00:00Z')",
		"bool:true");
	CEL_EXPECT(a, "timestamp('1960-02-29T23:00:00-01:30')",
		   "timestamp:1960-03-01T00:30:00Z");
	CEL_EXPECT(a, "timestamp(0)", "timestamp:1970-01-01T00:00:00Z");
	CEL_EXPECT(
		a,
		"timestamp('2024-01-01T00:00:10Z') - timestamp('2024-01-01T00:00:00Z')",
		"duration:10s");
	CEL_EXPECT(a, "timestamp('2024-01-01T00:00:00Z') + duration('1h')",
		   "timestamp:2024-01-01T01:00:00Z");
	CEL_EXPECT(a, "duration('1h') + timestamp('2024-01-01T00:00:00Z')",
		   "timestamp:2024-01-01T01:00:00Z");
	CEL_EXPECT(a, "timestamp('2024-03-01T00:00:00Z') - duration('24h')",
		   "timestamp:2024-02-29T00:00:00Z");
	CEL_EXPECT(
		a,
		"timestamp('2024-01-01T00:00:00Z') < timestamp('2024-01-01T00:00:01Z')",
		"bool:true");
	CEL_EXPECT(
		a,
		"timestamp(resource.metadata.deletionTimestamp) > timestamp(resource.metadata.creationTimestamp)",
		"bool:true");
	CEL_EXPECT(a, "duration('1m') > duration('59s')", "bool:true");
	CEL_EXPECT(a, "duration('1h2m3.5s')", "duration:3723.5s");
	CEL_EXPECT(a, "string(duration('1.5s'))", "string:1.5s");
	CEL_EXPECT(a, "duration('-1.5h')", "duration:-5400s");
	CEL_EXPECT(a, "duration('300ms') + duration('1us') + duration('2ns')",
		   "duration:0.300001002s");
	CEL_EXPECT(a, "duration('0')", "duration:0s");
	CEL_EXPECT(a, "duration('90m').getHours()", "int:1");
	CEL_EXPECT(a, "duration('90m').getMinutes()", "int:90");
	CEL_EXPECT(a, "duration('1.5s').getMilliseconds()", "int:1500");
	CEL_EXPECT(a, "timestamp('2024-03-01T12:34:56.789Z').getFullYear()",
		   "int:2024");
	CEL_EXPECT(a, "timestamp('2024-03-01T12:34:56.789Z').getMonth()",
		   "int:2");
	CEL_EXPECT(a, "timestamp('2024-03-01T12:34:56.789Z').getDate()",
		   "int:1");
	CEL_EXPECT(a, "timestamp('2024-03-01T12:34:56.789Z').getDayOfMonth()",
		   "int:0");
	CEL_EXPECT(a, "timestamp('2024-03-01T12:34:56.789Z').getDayOfWeek()",
		   "int:5");
	CEL_EXPECT(a, "timestamp('2024-03-01T12:34:56.789Z').getDayOfYear()",
		   "int:60");
	CEL_EXPECT(a, "timestamp('2024-03-01T12:34:56.789Z').getHours()",
		   "int:12");
	CEL_EXPECT(a, "timestamp('2024-03-01T12:34:56.789Z').getMinutes()",
		   "int:34");
	CEL_EXPECT(a, "timestamp('2024-03-01T12:34:56.789Z').getSeconds()",
		   "int:56");
	CEL_EXPECT(a, "timestamp('2024-03-01T12:34:56.789Z').getMilliseconds()",
		   "int:789");
	CEL_EXPECT(a, "timestamp('2024-03-01T23:34:56Z').getHours('+02:00')",
		   "int:1");
	CEL_EXPECT(a, "timestamp('2024-03-01T23:34:56Z').getDate('+02:00')",
		   "int:2");
	CEL_EXPECT(a,
		   "timestamp('2024-03-01T00:30:00Z').getDayOfWeek('-01:00')",
		   "int:4");
	CEL_EXPECT(a, "timestamp('1969-12-31T23:59:59.999Z').getMilliseconds()",
		   "int:999");
	CEL_EXPECT_ERR(
		a, "timestamp('2024-01-01T00:00:00Z').getHours('Europe/Paris')",
		2, "time zone 'Europe/Paris' is not supported");
	CEL_EXPECT_ERR(a, "timestamp('2024-02-30T00:00:00Z')", 2,
		       "cannot convert");
	CEL_EXPECT_ERR(a, "timestamp('2024-01-01 00:00:00Z')", 2,
		       "want RFC 3339");
	CEL_EXPECT_ERR(a, "timestamp('0001-01-01T00:00:00Z')", 2,
		       "outside the supported range");
	CEL_EXPECT_ERR(
		a, "timestamp('2262-01-01T00:00:00Z') + duration('2400000h')",
		2, "timestamp out of range");
	CEL_EXPECT_ERR(a, "duration('1x')", 2, "cannot convert '1x'");
	CEL_EXPECT_ERR(a, "duration('')", 2, "cannot convert");
	CEL_EXPECT_ERR(a, "duration('3000000h')", 2, "out of range");
	CEL_EXPECT_ERR(
		a,
		"timestamp('2024-01-01T00:00:00Z') + timestamp('2024-01-01T00:00:00Z')",
		1, "no matching overload for '_+_'");
	CEL_EXPECT_ERR(a, "duration('1s') - timestamp('2024-01-01T00:00:00Z')",
		       1, "no matching overload for '_-_'");
	CEL_EXPECT_ERR(a, "duration('1s') < timestamp('2024-01-01T00:00:00Z')",
		       1, "no matching overload for '_<_'");
	doc__free_file(fx.f);
}

/* The expressions in the design seed, against realistic objects. */
TEST(cel_seed_expressions)
{
	FIXTURE(fx);
	struct cel_activation act = fx.act;
	const struct cel_activation *a = &act;
	const struct doc_node *conds =
		doc__path(fx.f->docs[0], "status.conditions");

	CEL_EXPECT(a, "value", "double:1500");
	CEL_EXPECT(a, "value / 1000.0", "double:1.5");
	CEL_EXPECT(a, "item.status == 'True' ? 1 : 0", "int:1");
	CEL_EXPECT(a, "item.type", "string:Accepted");
	CEL_EXPECT(a, "item.reason", "string:Accepted");
	act.item = conds->list.items[1];
	CEL_EXPECT(a, "item.status == 'True' ? 1 : 0", "int:0");
	CEL_EXPECT(a, "item.type", "string:ResolvedRefs");
	CEL_EXPECT(a, "resource.metadata.name", "string:web");
	CEL_EXPECT(a, "resource.metadata.namespace", "string:prod");
	CEL_EXPECT(a, "string(resource.metadata.uid)",
		   "string:8a1b2c3d-0000-4000-8000-000000000001");
	CEL_EXPECT(a, "attributes['k8s.gateway.name']", "string:public-gw");
	CEL_EXPECT(a, "attributes['envoy.cluster_name']", "string:prod/web/80");
	CEL_EXPECT(a, "resource.metadata.deletionTimestamp != null",
		   "bool:true");
	act.resource = fx.f->docs[2];
	CEL_EXPECT(a, "resource.metadata.deletionTimestamp != null",
		   "bool:false");
	/*
	 * Absent field: CEL says "no such key" (as Kubernetes CEL does);
	 * has() is the way to test presence without an error.
	 */
	act.resource = fx.f->docs[1];
	CEL_EXPECT_ERR(a, "resource.metadata.deletionTimestamp != null", 2,
		       "no such key: deletionTimestamp");
	CEL_EXPECT(a, "has(resource.metadata.deletionTimestamp)", "bool:false");
	act.item = NULL;
	CEL_EXPECT_ERR(a, "item.type", 2, "'item' is not bound");
	doc__free_file(fx.f);
}

TEST(cel_results_and_conversions_api)
{
	struct cel_value v = { .type = CEL_INT, .i = 7 };
	char buf[64];
	double d;

	ASSERT_EQ(cel__to_double(&v, &d), 0);
	ASSERT_NEAR(d, 7, 0);
	v.type = CEL_UINT;
	v.u = 9;
	ASSERT_EQ(cel__to_double(&v, &d), 0);
	ASSERT_NEAR(d, 9, 0);
	v.type = CEL_BOOL;
	ASSERT_EQ(cel__to_double(&v, &d), -EINVAL);
	v.type = CEL_STRING;
	v.str.s = "abc";
	v.str.len = 3;
	ASSERT_EQ(cel__to_double(&v, &d), -EINVAL);
	ASSERT_EQ(cel__to_string(&v, buf, sizeof(buf)), 3);
	ASSERT_STREQ(buf, "abc");
	ASSERT_EQ(cel__to_string(&v, buf, 3), -ENOSPC);
	v.type = CEL_DOUBLE;
	v.d = 0.25;
	ASSERT_EQ(cel__to_string(&v, buf, sizeof(buf)), 4);
	ASSERT_STREQ(buf, "0.25");
	ASSERT_EQ(cel__to_string(&v, buf, 4), -ENOSPC);
	v.type = CEL_TIMESTAMP;
	v.i = 1234567890LL * 1000000000LL;
	ASSERT_TRUE(cel__to_string(&v, buf, sizeof(buf)) > 0);
	ASSERT_STREQ(buf, "2009-02-13T23:31:30Z");
	v.type = CEL_NULL;
	ASSERT_EQ(cel__to_string(&v, buf, sizeof(buf)), -EINVAL);
}

/* Cases from cel-spec tests/simple/testdata (parse, conversions, timestamps). */
TEST(cel_conformance_samples)
{
	FIXTURE(fx);
	const struct cel_activation *a = &fx.act;

	/* parse: nesting and repetition every implementation must support */
	CEL_EXPECT(
		a,
		"int(uint(int(uint(int(uint(int(uint(int(uint(int(uint(7))))))))))))",
		"int:7");
	CEL_EXPECT(a, "size([[[[[[[[[[[[0]]]]]]]]]]]])", "int:1");
	CEL_EXPECT(
		a,
		"size({0: {0: {0: {0: {0: {0: {0: {0: {0: {0: {0: {0: 'foo'}}}}}}}}}}}})",
		"int:1");
	CEL_EXPECT(
		a,
		"((((((((((((((((((((((((((((((((7))))))))))))))))))))))))))))))))",
		"int:7");
	CEL_EXPECT(
		a,
		"true ? true : true ? true : true ? true : true ? true : true ? true : "
		"true ? true : true ? true : true ? true : true ? true : true ? true : "
		"true ? true : true ? true : true ? true : true ? true : true ? true : "
		"true ? true : true ? true : true ? true : true ? true : true ? true : "
		"true ? true : true ? true : true ? true : true ? true : false",
		"bool:true");
	CEL_EXPECT(
		a,
		"3 - 3 + 3 - 3 + 3 - 3 + 3 - 3 + 3 - 3 + 3 - 3 + 3 - 3 + 3 - 3 + 3 - 3 + "
		"3 - 3 + 3 - 3 + 3 - 3 + 3",
		"int:3");
	CEL_EXPECT(
		a,
		"4 * 4 / 4 * 4 / 4 * 4 / 4 * 4 / 4 * 4 / 4 * 4 / 4 * 4 / 4 * 4 / 4 * 4 / "
		"4 * 4 / 4 * 4 / 4 * 4 / 4",
		"int:4");
	CEL_EXPECT(a, "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!true", "bool:true");
	CEL_EXPECT(a, "--------------------------------19", "int:19");
	CEL_EXPECT(
		a,
		"[[[[[[[[[[[['foo']]]]]]]]]]]][0][0][0][0][0][0][0][0][0][0][0][0]",
		"string:foo");
	CEL_EXPECT(
		a,
		"[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, "
		"20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31][17]",
		"int:17");
	CEL_EXPECT(a, "' \\\\ \\? \\\" \\' \\` '", "string: \\ ? \" ' ` ");
	CEL_EXPECT(a, "''' ? \" ' ` '''", "string: ? \" ' ` ");
	CEL_EXPECT(a, "' \\a \\b \\f \\t \\v '", "string: \a \b \f \t \v ");
	CEL_EXPECT(a, "''' \r\n '''", "string: \r\n ");
	CEL_EXPECT(a, "size(' \\000 \\012 \\177 ')", "int:7");
	/* conversions */
	CEL_EXPECT(a, "bytes('\\377') == b'\\377'", "bool:false");
	CEL_EXPECT(a, "double(9223372036854775807)",
		   "double:9.223372036854776e+18");
	CEL_EXPECT(a, "double('-0.0')", "double:-0");
	CEL_EXPECT(a, "double('6.02214e23')", "double:6.02214e+23");
	CEL_EXPECT(a, "type(dyn([1, 'one']))", "type:list");
	CEL_EXPECT(a, "int(-123.456)", "int:-123");
	CEL_EXPECT(a, "int(11.5)", "int:11");
	CEL_EXPECT_ERR(a, "int(1e99)", 2, "out of range");
	CEL_EXPECT(a, "int(timestamp('2004-09-16T23:59:59Z'))",
		   "int:1095379199");
	CEL_EXPECT(a, "string(123.456)", "string:123.456");
	CEL_EXPECT(a, "string(-4.5e-3)", "string:-0.0045");
	CEL_EXPECT(a, "string(b'\\303\\277')", "string:\xc3\xbf");
	CEL_EXPECT_ERR(a, "string(b'\\000\\xff')", 2, "not valid UTF-8");
	CEL_EXPECT(a, "bool", "type:bool");
	CEL_EXPECT_ERR(a, "dyn", 1, "undeclared reference to 'dyn'");
	CEL_EXPECT(a, "type(7) == type(7u)", "bool:false");
	CEL_EXPECT(a, "type(0.0) != type(-0.0)", "bool:false");
	CEL_EXPECT(a, "type(type(7)) == type(type(7u))", "bool:true");
	CEL_EXPECT(a, "type({'one': 1}) == type({1: 'one'})", "bool:true");
	CEL_EXPECT(a, "type(int)", "type:type");
	CEL_EXPECT(a, "uint(1e19)", "uint:10000000000000000000");
	CEL_EXPECT_ERR(a, "uint(6.022e23)", 2, "out of range");
	/* timestamps */
	CEL_EXPECT(a, "type(timestamp('2009-02-13T23:31:30Z'))",
		   "type:google.protobuf.Timestamp");
	CEL_EXPECT(a, "string(duration('1000000s'))", "string:1000000s");
	CEL_EXPECT(a, "timestamp('2009-02-13T23:31:30Z').getDayOfYear()",
		   "int:43");
	CEL_EXPECT(
		a,
		"timestamp('2009-02-13T23:31:20.123456789Z').getMilliseconds()",
		"int:123");
	CEL_EXPECT(a,
		   "timestamp('2009-02-13T23:31:30Z').getDayOfMonth('+11:00')",
		   "int:13");
	CEL_EXPECT(a,
		   "timestamp('2009-02-13T02:00:00Z').getDayOfMonth('-02:30')",
		   "int:11");
	CEL_EXPECT(a, "timestamp('2009-02-13T23:31:30Z').getFullYear('-09:30')",
		   "int:2009");
	CEL_EXPECT(a, "timestamp('2009-02-13T23:31:30Z').getHours('02:00')",
		   "int:1");
	CEL_EXPECT(a, "timestamp('2009-02-13T23:31:30Z').getSeconds('-00:00')",
		   "int:30");
	CEL_EXPECT(a, "timestamp('2009-02-13T23:31:30Z').getDayOfWeek('UTC')",
		   "int:5");
	CEL_EXPECT(a,
		   "duration('120s') + timestamp('2009-02-13T23:01:00Z') == "
		   "timestamp('2009-02-13T23:03:00Z')",
		   "bool:true");
	CEL_EXPECT(
		a,
		"timestamp('2009-02-13T23:31:00Z') - timestamp('2009-02-13T23:29:00Z') == "
		"duration('120s')",
		"bool:true");
	CEL_EXPECT(a, "duration('10000s').getHours()", "int:2");
	CEL_EXPECT(a, "duration('3730s').getMinutes()", "int:62");
	CEL_EXPECT(a, "duration('3730s').getSeconds()", "int:3730");
	CEL_EXPECT_ERR(a, "duration('320000000000s')", 2, "out of range");
	CEL_EXPECT_ERR(a, "timestamp('10000-01-01T00:00:00Z')", 2,
		       "cannot convert");
	doc__free_file(fx.f);
}
