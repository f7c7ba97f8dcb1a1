// SPDX-License-Identifier: Apache-2.0
/*
 * Bad manifests (with the file:line the message must name), hostname
 * intersection, request-head parsing and the `explain` command line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "policy/source/doc.h"
#include "agent/cmd/cmd.h"
#include "policy/gateway/gateway_api.h"
#include "policy/gateway/route_compile.h"
#include "policy/gateway/route_match.h"
#include "selftests/unit/test.h"
#include "selftests/unit/test_route_data.h"

static int add_yaml(struct gw_model *m, const char *yaml, char *err,
		    size_t errlen)
{
	struct doc_file *f = NULL;
	int ret;

	ret = doc__parse_buf("bad.yaml", yaml, strlen(yaml), &f, err, errlen);
	for (size_t i = 0; !ret && i < f->ndocs; i++)
		ret = gateway_api__add_doc(m, f->docs[i], err, errlen);
	doc__free_file(f);
	return ret;
}

#define ROUTE_HEAD                                                             \
	"apiVersion: gateway.networking.k8s.io/v1\n" /* 1 */                   \
	"kind: HTTPRoute\n"                          /* 2 */                   \
	"metadata:\n"                                /* 3 */                   \
	"  name: r\n"                                /* 4 */                   \
	"spec:\n"                                    /* 5 */

static const struct {
	const char *what, *yaml, *want; /* want: prefix of the message */
	int err;
} bad[] = {
	{ "missing name",
	  "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
	  "metadata:\n  namespace: x\nspec: {}\n",
	  "bad.yaml:4: metadata.name is required", -EINVAL },
	{ "no metadata",
	  "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n",
	  "bad.yaml:1: HTTPRoute: metadata.name is required", -EINVAL },
	{ "name not a string",
	  "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n"
	  "metadata:\n  name: [a]\n",
	  "bad.yaml:4: metadata.name must be a string, not list", -EINVAL },
	{ "hostnames not a list", ROUTE_HEAD "  hostnames: foo.com\n",
	  "bad.yaml:6: spec.hostnames must be a list, not string", -EINVAL },
	{ "bad hostname", ROUTE_HEAD "  hostnames: [\"foo.com:80\"]\n",
	  "bad.yaml:6: spec.hostnames[] \"foo.com:80\" is not a hostname",
	  -EINVAL },
	/* the message said "no IPs" but these passed */
	{ "IPv4 hostname", ROUTE_HEAD "  hostnames: [\"127.0.0.1\"]\n",
	  "bad.yaml:6: spec.hostnames[] \"127.0.0.1\" is not a hostname",
	  -EINVAL },
	{ "empty first label", ROUTE_HEAD "  hostnames: [\".example.com\"]\n",
	  "bad.yaml:6: spec.hostnames[] \".example.com\" is not a hostname",
	  -EINVAL },
	{ "label ending in '-'",
	  ROUTE_HEAD "  hostnames: [\"a-.example.com\"]\n",
	  "bad.yaml:6: spec.hostnames[] \"a-.example.com\" is not a hostname",
	  -EINVAL },
	/* "\0" cut the hostname to "a.com" */
	{ "NUL in hostname", ROUTE_HEAD "  hostnames: [\"a.com\\0.evil\"]\n",
	  "bad.yaml:6: spec.hostnames[] contains a NUL byte", -EINVAL },
	{ "NUL in a name", ROUTE_HEAD "  parentRefs: [{name: \"gw\\0x\"}]\n",
	  "bad.yaml:6: parentRef.name contains a NUL byte", -EINVAL },
	/* strtoll() skipped the blank: port 80 */
	{ "port 0x 50", ROUTE_HEAD "  parentRefs: [{name: gw, port: 0x 50}]\n",
	  "bad.yaml:6: parentRef.port must be an integer, not string",
	  -EINVAL },
	{ "path without '/'",
	  ROUTE_HEAD "  rules:\n  - matches:\n"
		     "    - path:\n        type: Exact\n        value: api\n",
	  "bad.yaml:9: path.value \"api\" must start with '/'", -EINVAL },
	{ "path with dot segment",
	  ROUTE_HEAD "  rules:\n  - matches:\n"
		     "    - path: {value: /a/..}\n",
	  "bad.yaml:8: path.value \"/a/..\" must not contain", -EINVAL },
	{ "path with encoded slash",
	  ROUTE_HEAD "  rules:\n  - matches:\n"
		     "    - path: {type: Exact, value: /a%2Fb}\n",
	  "bad.yaml:8: path.value \"/a%2Fb\" must not contain", -EINVAL },
	{ "unknown path type",
	  ROUTE_HEAD "  rules:\n  - matches:\n"
		     "    - path: {type: Prefix, value: /a}\n",
	  "bad.yaml:8: path.type \"Prefix\" is not a Gateway API path "
	  "match type; use Exact, PathPrefix or RegularExpression",
	  -EINVAL },
	{ "misspelt path type",
	  ROUTE_HEAD "  rules:\n  - matches:\n"
		     "    - path: {type: Pathprefix, value: /a}\n",
	  "bad.yaml:8: path.type \"Pathprefix\" is not a Gateway API path "
	  "match type (did you mean `PathPrefix`?)",
	  -EINVAL },
	{ "path value wrong type",
	  ROUTE_HEAD "  rules:\n  - matches:\n"
		     "    - path: {value: 12}\n",
	  "bad.yaml:8: path.value must be a string, not int", -EINVAL },
	{ "lower-case method",
	  ROUTE_HEAD "  rules:\n  - matches:\n"
		     "    - method: get\n",
	  "bad.yaml:8: match.method \"get\": use GET", -EINVAL },
	{ "bad regex",
	  ROUTE_HEAD "  rules:\n  - matches:\n"
		     "    - path: {type: RegularExpression, value: \"/(a\"}\n",
	  "bad.yaml:8: invalid regular expression: missing ): /(a", -EINVAL },
	/* 554 MB and 30 s per match under POSIX regcomp/regexec */
	{ "regex past the repetition bound",
	  ROUTE_HEAD
	  "  rules:\n  - matches:\n"
	  "    - path: {type: RegularExpression, value: \"/(.{0,255}){0,255}\"}\n",
	  "bad.yaml:8: invalid regular expression: invalid repetition size",
	  -EINVAL },
	{ "regex past the program size",
	  ROUTE_HEAD
	  "  rules:\n  - matches:\n"
	  "    - headers: [{name: x, type: RegularExpression, value: \".{0,1000}\"}]\n",
	  "bad.yaml:8: invalid regular expression: the compiled expression has",
	  -EINVAL },
	{ "header without value",
	  ROUTE_HEAD "  rules:\n  - matches:\n"
		     "    - headers:\n      - name: x\n",
	  "bad.yaml:9: headers.value is required", -EINVAL },
	{ "header bad type",
	  ROUTE_HEAD
	  "  rules:\n  - matches:\n"
	  "    - headers:\n      - {name: x, value: y, type: Prefix}\n",
	  "bad.yaml:9: headers.type \"Prefix\": use Exact or RegularExpression",
	  -EINVAL },
	{ "rules not a list", ROUTE_HEAD "  rules: {}\n",
	  "bad.yaml:6: spec.rules must be a list, not map", -EINVAL },
	{ "rule not a map", ROUTE_HEAD "  rules:\n  - 3\n",
	  "bad.yaml:7: rules[0] must be a mapping, not int", -EINVAL },
	{ "parentRef without name",
	  ROUTE_HEAD "  parentRefs:\n"
		     "  - namespace: x\n",
	  "bad.yaml:7: parentRef.name is required", -EINVAL },
	{ "parentRef port out of range",
	  ROUTE_HEAD "  parentRefs:\n"
		     "  - {name: g, port: 70000}\n",
	  "bad.yaml:7: parentRef.port must be 1..65535", -EINVAL },
	{ "bad creationTimestamp",
	  "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
	  "metadata:\n  name: r\n  creationTimestamp: yesterday\nspec: {}\n",
	  "bad.yaml:5: metadata.creationTimestamp \"yesterday\" is not RFC 3339",
	  -EINVAL },
	{ "no spec",
	  "apiVersion: gateway.networking.k8s.io/v1\n"
	  "kind: HTTPRoute\nmetadata: {name: r}\n",
	  "bad.yaml:1: HTTPRoute default/r: spec is required", -EINVAL },
	{ "listener without port",
	  "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n"
	  "metadata: {name: g}\nspec:\n  listeners:\n"
	  "  - {name: a, protocol: HTTP}\n",
	  "bad.yaml:6: listener.port is required", -EINVAL },
	{ "gateway without listeners",
	  "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n"
	  "metadata: {name: g}\nspec:\n  gatewayClassName: x\n",
	  "bad.yaml:5: Gateway default/g: spec.listeners needs at least one",
	  -EINVAL },
	{ "bad allowedRoutes.from",
	  "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n"
	  "metadata: {name: g}\nspec:\n  listeners:\n"
	  "  - name: a\n    protocol: HTTP\n    port: 80\n"
	  "    allowedRoutes:\n      namespaces: {from: Some}\n",
	  "bad.yaml:10: namespaces.from \"Some\": use Same, All or Selector",
	  -EINVAL },
	{ "Selector without selector",
	  "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n"
	  "metadata: {name: g}\nspec:\n  listeners:\n"
	  "  - name: a\n    protocol: HTTP\n    port: 80\n"
	  "    allowedRoutes:\n      namespaces: {from: Selector}\n",
	  "bad.yaml:10: namespaces.from Selector needs namespaces.selector",
	  -EINVAL },
	{ "selector operator",
	  "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n"
	  "metadata: {name: g}\nspec:\n  listeners:\n"
	  "  - name: a\n    protocol: HTTP\n    port: 80\n"
	  "    allowedRoutes:\n      namespaces:\n        from: Selector\n"
	  "        selector:\n          matchExpressions:\n"
	  "          - {key: k, operator: Within, values: [x]}\n",
	  "bad.yaml:14: operator \"Within\": use In, NotIn, Exists or DoesNotExist",
	  -EINVAL },
	{ "Exists with values",
	  "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n"
	  "metadata: {name: g}\nspec:\n  listeners:\n"
	  "  - name: a\n    protocol: HTTP\n    port: 80\n"
	  "    allowedRoutes:\n      namespaces:\n        from: Selector\n"
	  "        selector:\n          matchExpressions:\n"
	  "          - {key: k, operator: Exists, values: [x]}\n",
	  "bad.yaml:14: operator Exists takes no values", -EINVAL },
	{ "label value not a string",
	  "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n"
	  "  labels: {on: true}\n",
	  "bad.yaml:5: metadata.labels.on: label values are strings (quote it)",
	  -EINVAL },
	{ "duplicate route",
	  ROUTE_HEAD "  rules: []\n---\n" ROUTE_HEAD "  rules: []\n",
	  "bad.yaml:8: HTTPRoute default/r is already defined at bad.yaml:1",
	  -EEXIST },
	{ "no kind", "apiVersion: v1\nmetadata: {name: x}\n",
	  "bad.yaml:1: manifest needs string apiVersion and kind", -EINVAL },
};

TEST(route_input_bad_manifests)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gw_model *m = gateway_api__new();
		char err[512] = "";
		int ret;

		ASSERT_TRUE(m != NULL);
		ret = add_yaml(m, bad[i].yaml, err, sizeof(err));
		gateway_api__free(m);
		ASSERT_TRUE(ret == bad[i].err && !strncmp(err, bad[i].want,
							  strlen(bad[i].want)),
			    "case \"%s\": ret %d, message \"%s\", want \"%s\"",
			    bad[i].what, ret, err, bad[i].want);
	}
}

/* Route with nrules rules of nmatches matches, each match with nheaders. */
static char *big_route(size_t nrules, size_t nmatches, size_t nheaders,
		       size_t nhosts)
{
	size_t cap = 256 + nhosts * 32 +
		     nrules * nmatches * (64 + nheaders * 40),
	       len = 0;
	char *y = malloc(cap);

	if (!y)
		return NULL;
	len += snprintf(y + len, cap - len, ROUTE_HEAD "  hostnames:\n");
	for (size_t h = 0; h < nhosts; h++)
		len += snprintf(y + len, cap - len, "  - h%zu.example.com\n",
				h);
	len += snprintf(y + len, cap - len, "  rules:\n");
	for (size_t r = 0; r < nrules; r++) {
		len += snprintf(y + len, cap - len, "  - matches:\n");
		for (size_t m = 0; m < nmatches; m++) {
			len += snprintf(y + len, cap - len,
					"    - path: {value: /r%zu/m%zu}\n"
					"      headers:\n",
					r, m);
			for (size_t h = 0; h < nheaders; h++)
				len += snprintf(
					y + len, cap - len,
					"      - {name: h%zu, value: v}\n", h);
		}
	}
	return y;
}

/*
 * with 65 537 rules, rule 65 536 was reported as rule 0. The
 * Gateway API's own bounds keep a route far below what the table holds.
 */
TEST(route_input_gateway_api_limits)
{
	static const struct {
		size_t rules, matches, headers, hosts;
		const char *want;
	} cases[] = {
		{ 16, 8, 16, 16, NULL },
		{ 17, 1, 0, 1,
		  "spec.rules has 17 items; the Gateway API allows at most 16" },
		{ 1, 65, 0, 1,
		  "rule.matches has 65 items; the Gateway API allows at most 64" },
		{ 3, 43, 0, 1, "spec.rules hold more than 128 matches in all" },
		{ 1, 1, 17, 1,
		  "headers has 17 items; the Gateway API allows at most 16" },
		{ 1, 1, 0, 17,
		  "spec.hostnames has 17 items; the Gateway API allows at most 16" },
		/* the object cap (DOC_MAX_OBJECT_NODES) says it first */
		{ 65537, 1, 0, 1,
		  "HTTPRoute holds more than 131072 YAML nodes" },
		{ 20000, 1, 0, 1, "spec.rules has 20000 items" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gw_model *m = gateway_api__new();
		char *y = big_route(cases[i].rules, cases[i].matches,
				    cases[i].headers, cases[i].hosts);
		char err[512] = "";
		int ret;

		ASSERT_TRUE(m && y);
		ret = add_yaml(m, y, err, sizeof(err));
		free(y);
		gateway_api__free(m);
		if (!cases[i].want) {
			ASSERT_TRUE(ret == 0, "case %zu: %s", i, err);
			continue;
		}
		ASSERT_TRUE(ret == -EINVAL && strstr(err, cases[i].want) &&
				    !strncmp(err, "bad.yaml:", 9),
			    "case %zu: ret %d, message \"%s\"", i, ret, err);
	}
}

TEST(route_input_defaults)
{
	struct gw_model *m = gateway_api__new();
	const struct gw_route *r;
	char err[256];

	ASSERT_EQ(add_yaml(m,
			   ROUTE_HEAD
			   "  parentRefs: [{name: g}]\n"
			   "  rules:\n  - backendRefs: [{name: b}]\n"
			   "  - matches:\n    - method: GET\n"
			   "      headers: [{name: X-A, value: '1'}, "
			   "{name: x-a, value: '2'}]\n",
			   err, sizeof(err)),
		  0);
	r = m->routes[0];
	ASSERT_STREQ(r->ns, "default");
	ASSERT_STREQ(r->parents[0].ns, "default");
	ASSERT_STREQ(r->parents[0].kind, "Gateway");
	ASSERT_TRUE(r->created == NULL);
	ASSERT_EQ(r->nrules, 2);
	/* No matches: one PathPrefix "/" match. */
	ASSERT_EQ(r->rules[0].nmatches, 1);
	ASSERT_EQ(r->rules[0].matches[0].path_type, GW_PATH_PREFIX);
	ASSERT_STREQ(r->rules[0].matches[0].path, "/");
	ASSERT_EQ(r->rules[0].matches[0].method, MM_M_ANY);
	ASSERT_EQ(r->rules[0].backends[0].weight, 1);
	ASSERT_STREQ(r->rules[0].backends[0].ns, "default");
	/* Match without path: PathPrefix "/"; duplicate header names: first. */
	ASSERT_EQ(r->rules[1].matches[0].path_type, GW_PATH_PREFIX);
	ASSERT_EQ(r->rules[1].matches[0].method, MM_M_GET);
	ASSERT_EQ(r->rules[1].matches[0].nheaders, 1);
	ASSERT_STREQ(r->rules[1].matches[0].headers[0].name, "x-a");
	ASSERT_STREQ(r->rules[1].matches[0].headers[0].value, "1");
	gateway_api__free(m);
}

TEST(route_input_load_dir_errors)
{
	struct gw_model *m = gateway_api__new();
	char err[512], path[512];
	FILE *f;

	ASSERT_EQ(gateway_api__load_dir(m, "/nonexistent/dir", err,
					sizeof(err)),
		  -ENOENT);
	ASSERT_TRUE(strstr(err, "/nonexistent/dir") != NULL);
	snprintf(path, sizeof(path), "%s/b.yaml", test__tmpdir());
	f = fopen(path, "w");
	ASSERT_TRUE(f != NULL);
	fputs("apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
	      "metadata: {name: r}\nspec:\n  rules:\n  - matches:\n"
	      "    - path: {value: nope}\n",
	      f);
	fclose(f);
	/* a bad object is left out with its reason; the others load */
	snprintf(path, sizeof(path), "%s/c.yaml", test__tmpdir());
	f = fopen(path, "w");
	ASSERT_TRUE(f != NULL);
	fputs("apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
	      "metadata: {name: ok}\nspec: {}\n",
	      f);
	fclose(f);
	ASSERT_EQ(gateway_api__load_dir(m, test__tmpdir(), err, sizeof(err)),
		  0);
	ASSERT_EQ(m->nrejected, 1);
	ASSERT_TRUE(strstr(m->rejected[0], "/b.yaml:7: path.value \"nope\" "
					   "must start with '/'") != NULL,
		    "%s", m->rejected[0]);
	ASSERT_EQ(m->nroutes, 1);
	ASSERT_STREQ(m->routes[0]->name, "ok");
	gateway_api__free(m);
}

TEST(route_input_intersect)
{
	static const struct {
		const char *l, *r, *want; /* want NULL: no intersection */
	} c[] = {
		{ NULL, NULL, "" },
		{ NULL, "a.com", "a.com" },
		{ "a.com", NULL, "a.com" },
		{ "a.com", "A.COM", "a.com" },
		{ "a.com", "b.com", NULL },
		{ "*.example.com", "foo.example.com", "foo.example.com" },
		{ "*.example.com", "a.b.example.com", "a.b.example.com" },
		{ "*.example.com", "example.com", NULL },
		{ "*.example.com", "fooexample.com", NULL },
		{ "foo.example.com", "*.example.com", "foo.example.com" },
		{ "example.com", "*.example.com", NULL },
		{ "*.example.com", "*.example.com", "*.example.com" },
		{ "*.example.com", "*.a.example.com", "*.a.example.com" },
		{ "*.a.example.com", "*.example.com", "*.a.example.com" },
		{ "*.a.com", "*.b.com", NULL },
	};
	char out[256];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		bool ok = route_compile__intersect(c[i].l, c[i].r, out,
						   sizeof(out));

		ASSERT_TRUE(ok == (c[i].want != NULL) &&
				    (!ok || !strcmp(out, c[i].want)),
			    "%s x %s: %s %s", c[i].l ? c[i].l : "-",
			    c[i].r ? c[i].r : "-", ok ? "got" : "none",
			    ok ? out : "");
	}
}

TEST(route_input_prefix_and_host)
{
	char h[64];

	ASSERT_TRUE(route_match__prefix_matches("/foo", 4, "/foo", 4));
	ASSERT_TRUE(route_match__prefix_matches("/foo", 4, "/foo/", 5));
	ASSERT_TRUE(route_match__prefix_matches("/foo", 4, "/foo/bar", 8));
	ASSERT_TRUE(!route_match__prefix_matches("/foo", 4, "/foobar", 7));
	ASSERT_TRUE(!route_match__prefix_matches("/foo", 4, "/Foo", 4));
	ASSERT_TRUE(route_match__prefix_matches("", 0, "/", 1));
	ASSERT_TRUE(!route_match__prefix_matches("", 0, "*", 1));
	ASSERT_EQ(route_match__norm_host("WWW.A.com.:8080", 15, h, sizeof(h)),
		  9);
	ASSERT_STREQ(h, "www.a.com");
	ASSERT_EQ(route_match__norm_host("[::1]:80", 8, h, sizeof(h)), 5);
	ASSERT_STREQ(h, "[::1]");
	ASSERT_EQ(route_compile__hash("", 0), MM_FNV_OFFSET);
	/* FNV-1a 64 reference value for "a". */
	ASSERT_EQ(route_compile__hash("a", 1), 0xaf63dc4c8601ec8cULL);
}

TEST(route_input_parse_head)
{
	static const char head[] = "POST /api/x?debug=1&b HTTP/1.1\r\n"
				   "host:  Www.Example.com:80 \r\n"
				   "X-Canary: true\r\n"
				   "  folded\r\n"
				   "Host: second.example\r\n"
				   "\r\n"
				   "body";
	static const char abs[] = "GET http://h.example/p?q=1 HTTP/1.1\r\n"
				  "Host: other\r\n\r\n";
	static const char cut[] = "GET /a HTTP/1.1\r\nHost: h\r\nX-Lo";
	struct http_req r;

	ASSERT_EQ(route_match__parse_head(head, sizeof(head) - 1, &r), 0);
	ASSERT_EQ(r.method, MM_M_POST);
	ASSERT_EQ(r.path_len, 6);
	ASSERT_TRUE(!memcmp(r.path, "/api/x", 6));
	ASSERT_EQ(r.query_len, 9);
	ASSERT_TRUE(!memcmp(r.query, "debug=1&b", 9));
	ASSERT_EQ(r.host_len, 18);
	ASSERT_TRUE(!memcmp(r.host, "Www.Example.com:80", 18));
	ASSERT_EQ(r.nheaders, 3);
	ASSERT_TRUE(!r.truncated && !r.absolute_form);

	ASSERT_EQ(route_match__parse_head(abs, sizeof(abs) - 1, &r), 0);
	ASSERT_TRUE(r.absolute_form);
	ASSERT_EQ(r.host_len, 9);
	ASSERT_TRUE(!memcmp(r.host, "h.example", 9));
	ASSERT_EQ(r.path_len, 2);
	ASSERT_EQ(r.query_len, 3);

	ASSERT_EQ(route_match__parse_head(cut, sizeof(cut) - 1, &r), 0);
	ASSERT_TRUE(r.truncated);
	ASSERT_EQ(r.nheaders, 1);
	ASSERT_EQ(r.host_len, 1);

	ASSERT_EQ(route_match__parse_head("GET /a HT", 9, &r), -ENODATA);
	ASSERT_EQ(route_match__parse_head("\x16\x03\x01", 3, &r), -EINVAL);
	ASSERT_EQ(route_match__parse_head("GET /a\r\n\r\n", 10, &r), -EINVAL);
	ASSERT_EQ(route_match__parse_head("GET /a SPDY/3\r\n\r\n", 17, &r),
		  -EINVAL);
	ASSERT_EQ(route_match__parse_head("PROPFIND / HTTP/1.1\r\n\r\n", 23,
					  &r),
		  0);
	ASSERT_EQ(r.method, MM_M_OTHER);
	ASSERT_TRUE(r.host == NULL);
}

/* Run explain with a memory stream; returns its exit status. */
static int explain(char **out, char **errs, const char *const *args)
{
	char *argv[32];
	size_t olen, elen;
	FILE *o = open_memstream(out, &olen);
	FILE *e = open_memstream(errs, &elen);
	int argc = 0, ret;

	argv[argc++] = "explain";
	while (*args && argc < 31)
		argv[argc++] = (char *)*args++;
	argv[argc] = NULL;
	test_log_to(e);
	ret = explain__run(argc, argv, o, e);
	test_log_to(NULL);
	fclose(o);
	fclose(e);
	return ret;
}

#define DIR route_testdata()

TEST(route_input_explain)
{
	const struct {
		const char *args[10];
		int ret;
		const char *out,
			*err; /* prefixes of stdout, substr of stderr */
	} c[] = {
		{ { "--manifests", DIR, "--gateway", "infra/gw",
		    "http://www.example.com/login?x=1" },
		  0,
		  "apps/login rule 0\nvhost www.example.com (exact)\n",
		  "" },
		{ { "--manifests", DIR, "-X", "POST", "-H", "X-Canary: true",
		    "http://www.example.com/api/x" },
		  0,
		  "apps/api rule 2\n",
		  "" },
		{ { "--manifests", DIR, "-H", "x-canary:true", "-H",
		    "Host: www.example.com", "/api/x?debug=1" },
		  0,
		  "apps/api rule 4\n",
		  "" },
		{ { "--manifests", DIR, "--gateway", "infra/gw",
		    "http://nothing.test/x" },
		  0,
		  "unmatched\n",
		  "" },
		{ { "--manifests", DIR, "http://www.example.com/api", "-H",
		    "X-Canary: true" },
		  0,
		  "apps/api rule 4\n",
		  "" },
		{ { "--help" }, 0, "usage: milometer explain", "" },
		{ { "--manifests", DIR, "www.example.com/x" },
		  2,
		  "",
		  "use http://host/path" },
		{ { "--manifests", DIR, "http:///x" }, 2, "", "has no host" },
		{ { "--manifests", DIR, "-H", "NoColon", "http://a/" },
		  2,
		  "",
		  "write it as 'Name: value'" },
		{ { "--manifests", DIR, "-H", "Bad Name: v", "http://a/" },
		  2,
		  "",
		  "not allowed in HTTP header names" },
		{ { "--manifests", DIR, "-X", "G ET", "http://a/" },
		  2,
		  "",
		  "is not an HTTP token" },
		{ { "--manifests", "/nonexistent", "http://a/" },
		  2,
		  "",
		  "cannot read manifests: /nonexistent: No such file" },
		{ { "--manifests", DIR, "--gateway", "x/y", "http://a/" },
		  2,
		  "",
		  "gateway x/y is not in the manifests" },
		{ { "--manifests", DIR }, 2, "", "exactly one URL" },
		{ { "--bogus", "http://a/" }, 2, "", "unknown or incomplete" },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char *out = NULL, *errs = NULL;
		int ret = explain(&out, &errs, c[i].args);
		bool ok = ret == c[i].ret &&
			  !strncmp(out, c[i].out, strlen(c[i].out)) &&
			  strstr(errs, c[i].err);

		if (!ok)
			test__fail(__FILE__, __LINE__,
				   "explain case %zu: ret %d\nstdout: %s\n"
				   "stderr: %s",
				   i, ret, out, errs);
		free(out);
		free(errs);
		if (!ok)
			return;
	}
}

TEST(route_input_explain_manifest_error)
{
	char *out = NULL, *errs = NULL, path[512];
	const char *args[] = { "--manifests", test__tmpdir(), "http://a/",
			       NULL };
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "%s/x.yml", test__tmpdir());
	f = fopen(path, "w");
	ASSERT_TRUE(f != NULL);
	fputs("apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
	      "metadata: {name: r}\nspec:\n  hostnames: 3\n",
	      f);
	fclose(f);
	/*
	 * one bad file used to stop explain; a FIFO named *.yaml
	 * made it hang. Both are left out and the rest is explained.
	 */
	snprintf(path, sizeof(path), "%s/fifo.yaml", test__tmpdir());
	ASSERT_EQ(mkfifo(path, 0600), 0);
	snprintf(path, sizeof(path), "%s/good.yaml", test__tmpdir());
	f = fopen(path, "w");
	ASSERT_TRUE(f != NULL);
	fputs("apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n"
	      "metadata: {name: gw}\nspec:\n  listeners:\n"
	      "  - {name: h, protocol: HTTP, port: 80}\n---\n"
	      "apiVersion: v1\nkind: List\nitems:\n"
	      "- apiVersion: gateway.networking.k8s.io/v1\n  kind: HTTPRoute\n"
	      "  metadata: {name: good}\n  spec: {parentRefs: [{name: gw}]}\n",
	      f);
	fclose(f);
	ret = explain(&out, &errs, args);
	ASSERT_EQ(ret, 0);
	ASSERT_TRUE(strstr(errs, "left out: ") &&
			    strstr(errs,
				   "/x.yml:5: spec.hostnames must be a list"),
		    "%s", errs);
	ASSERT_TRUE(strstr(errs, "/fifo.yaml: not a regular file"), "%s", errs);
	/* the route inside the kind: List (kubectl get -o yaml) counts */
	ASSERT_TRUE(!strncmp(out, "default/good rule 0", 19), "%s", out);
	free(out);
	free(errs);
}

TEST(route_input_explain_nothing_attached)
{
	char *out = NULL, *errs = NULL;
	const char *args[] = { "--manifests", test__tmpdir(),
			       "http://a.example/", NULL };
	int ret = explain(&out, &errs, args);

	ASSERT_EQ(ret, 0);
	ASSERT_TRUE(!strncmp(out, "unmatched\nno vhost for host \"a.example\"",
			     39),
		    "%s", out);
	ASSERT_TRUE(strstr(out, "note: no HTTPRoute in") != NULL, "%s", out);
	free(out);
	free(errs);
}

TEST(route_input_lookup_head)
{
	static const char full[] = "GET /login HTTP/1.1\r\n"
				   "Host: www.example.com\r\n\r\n";
	static const char nohost[] = "GET /healthz HTTP/1.0\r\n\r\n";
	static const char cut[] = "GET /login HTTP/1.1\r\nUser-Agent: x\r\nHo";
	static const char apicut[] = "GET /api/x HTTP/1.1\r\n"
				     "Host: www.example.com\r\nX-Ca";
	static const char apifull[] = "GET /api/x HTTP/1.1\r\n"
				      "Host: www.example.com\r\n\r\n";
	static const char postcut[] = "POST /api/x HTTP/1.1\r\n"
				      "Host: www.example.com\r\nX-Ca";
	struct gw_model *m = gateway_api__new();
	struct route_table *t = NULL;
	struct route_result res;
	char err[256];

	ASSERT_EQ(gateway_api__load_dir(m, DIR, err, sizeof(err)), 0);
	ASSERT_EQ(route_compile__build(m, "infra/gw", 1, &t, err, sizeof(err)),
		  0);
	ASSERT_EQ(route_match__lookup_head(t, 0, 0, full, sizeof(full) - 1,
					   false, &res),
		  0);
	ASSERT_STREQ(t->routes[res.route_id].name, "login");
	/* BPF cut the head at MM_HEAD_MAX: still complete enough. */
	ASSERT_EQ(route_match__lookup_head(t, 0, 0, full, sizeof(full) - 3,
					   true, &res),
		  0);
	ASSERT_STREQ(t->routes[res.route_id].name, "login");
	ASSERT_EQ(route_match__lookup_head(t, 0, 0, nohost, sizeof(nohost) - 1,
					   false, &res),
		  0);
	ASSERT_STREQ(t->routes[res.route_id].name, "catchall");
	ASSERT_EQ(route_match__lookup_head(t, 0, 0, cut, sizeof(cut) - 1, true,
					   &res),
		  0);
	ASSERT_EQ(res.route_id, MM_ROUTE_UNKNOWN);
	ASSERT_EQ(route_match__lookup_head(t, 0, 0, full, 8, true, &res), 0);
	ASSERT_EQ(res.route_id, MM_ROUTE_UNKNOWN);
	ASSERT_EQ(route_match__lookup_head(t, 0, 0, "\x16\x03", 2, true, &res),
		  -EINVAL);
	/* Cut head, header-dependent rules above the answer: unknown. */
	ASSERT_EQ(route_match__lookup_head(t, 0, 0, apicut, sizeof(apicut) - 1,
					   true, &res),
		  0);
	ASSERT_EQ(res.route_id, MM_ROUTE_UNKNOWN);
	/* Same head complete: rule 0 with certainty. */
	ASSERT_EQ(route_match__lookup_head(t, 0, 0, apifull,
					   sizeof(apifull) - 1, false, &res),
		  0);
	ASSERT_STREQ(t->routes[res.route_id].name, "api");
	ASSERT_EQ(res.rule_idx, 0);
	/* Cut, but POST's method rule outranks every header rule. */
	ASSERT_EQ(route_match__lookup_head(t, 0, 0, postcut,
					   sizeof(postcut) - 1, true, &res),
		  0);
	ASSERT_EQ(res.rule_idx, 2);
	route_compile__free(t);
	gateway_api__free(m);
}

TEST(route_input_explain_verbose)
{
	char *out = NULL, *errs = NULL;
	const char *args[] = { "--manifests",
			       DIR,
			       "--gateway",
			       "infra/gw",
			       "-v",
			       "-H",
			       "X-Canary: true",
			       "http://www.example.com/api/x?debug=1",
			       NULL };
	int ret = explain(&out, &errs, args);

	ASSERT_EQ(ret, 0);
	ASSERT_TRUE(!strncmp(out, "apps/api rule 4\n", 16), "%s", out);
	ASSERT_TRUE(strstr(out, "precedence list of vhost www.example.com "
				"(18 matches):") != NULL,
		    "%s", out);
	ASSERT_TRUE(strstr(out, "=> PathPrefix  /api header:x-canary=true  "
				"apps/api rule 4 match 0") != NULL,
		    "%s", out);
	ASSERT_TRUE(strstr(out, "ok PathPrefix  /  apps/login rule 1") != NULL,
		    "%s", out);
	ASSERT_TRUE(strstr(out, "note: HTTPRoute apps/othns is not attached") !=
			    NULL,
		    "%s", out);
	free(out);
	free(errs);
}

/* Every compiled pattern may hold REGEX_MAX_MEM: at most 64 per object. */
TEST(route_input_regex_count_limit)
{
	for (int nre = 64; nre <= 65; nre++) {
		struct gw_model *m = gateway_api__new();
		char *y = malloc(64 * 1024), err[512] = "";
		size_t len = 0;
		int ret;

		ASSERT_TRUE(m && y);
		len += snprintf(y + len, 64 * 1024 - len,
				ROUTE_HEAD "  rules:\n  - matches:\n");
		for (int i = 0; i < nre; i += 13) {
			len += snprintf(y + len, 64 * 1024 - len,
					"    - headers:\n");
			for (int h = i; h < nre && h < i + 13; h++)
				len += snprintf(
					y + len, 64 * 1024 - len,
					"      - {name: h%d, type: RegularExpression, value: \"v[0-9]+\"}\n",
					h);
		}
		ret = add_yaml(m, y, err, sizeof(err));
		free(y);
		gateway_api__free(m);
		if (nre == 64)
			ASSERT_TRUE(ret == 0, "%s", err);
		else
			ASSERT_TRUE(
				ret == -EINVAL &&
					strstr(err,
					       "more than 64 RegularExpression matches in one object"),
				"%d %s", ret, err);
	}
}

/*
 * An invalid rule is dropped alone (the Gateway API's PartiallyInvalid):
 * the route keeps its other rules at their indexes; only a route with no
 * valid rule left is rejected as a whole.
 */
TEST(route_input_invalid_rule_dropped_alone)
{
	struct gw_model *m = gateway_api__new();
	const struct gw_route *r;
	char err[512] = "";

	ASSERT_EQ(
		add_yaml(
			m,
			ROUTE_HEAD
			"  rules:\n" /* 6 */
			"  - matches: [{path: {type: Exact, value: /ok}}]\n"
			"  - matches:\n" /* 8 */
			"    - path: {type: RegularExpression, value: \"/(.{0,255}){0,255}\"}\n"
			"  - matches: [{path: {type: Pathprefix, value: /p}}]\n"
			"  - matches: [{path: {value: /last}}]\n",
			err, sizeof(err)),
		0);
	ASSERT_EQ(m->nroutes, 1);
	r = m->routes[0];
	ASSERT_EQ(r->nrules, 4);
	ASSERT_EQ(r->ndropped, 2);
	ASSERT_TRUE(r->rules[0].dropped == NULL);
	ASSERT_EQ(r->rules[0].nmatches, 1);
	ASSERT_STREQ(r->rules[0].matches[0].path, "/ok");
	ASSERT_TRUE(r->rules[1].dropped &&
			    strstr(r->rules[1].dropped,
				   "bad.yaml:9: invalid regular expression"),
		    "%s", r->rules[1].dropped);
	ASSERT_EQ(r->rules[1].nmatches, 0);
	ASSERT_TRUE(r->rules[2].dropped &&
			    strstr(r->rules[2].dropped,
				   "bad.yaml:10: path.type \"Pathprefix\""),
		    "%s", r->rules[2].dropped);
	ASSERT_STREQ(r->rules[3].matches[0].path, "/last");
	/* the count the agent's milometer_routes_rules_dropped reports */
	ASSERT_EQ(gateway_api__log_dropped(m, NULL, ""), 2);
	gateway_api__free(m);

	m = gateway_api__new();
	ASSERT_EQ(
		add_yaml(
			m,
			ROUTE_HEAD
			"  rules:\n"
			"  - matches: [{path: {type: Pathprefix, value: /p}}]\n",
			err, sizeof(err)),
		-EINVAL);
	ASSERT_TRUE(strstr(err, "bad.yaml:7: path.type \"Pathprefix\""), "%s",
		    err);
	ASSERT_EQ(m->nroutes, 0);
	gateway_api__free(m);
}

/* explain reads a single file as check does, and keeps the file's good part. */
TEST(route_input_explain_single_file_partially_invalid)
{
	char *out = NULL, *errs = NULL, path[512];
	const char *args[] = { "--manifests", path, "http://a.example.com/ok",
			       NULL };
	const char *args2[] = { "--manifests", path, "http://b.example.com/x",
				NULL };
	FILE *f;

	snprintf(path, sizeof(path), "%s/all.yaml", test__tmpdir());
	f = fopen(path, "w");
	ASSERT_TRUE(f != NULL);
	fputs("apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n"
	      "metadata: {name: gw}\nspec:\n  listeners:\n"
	      "  - {name: h, protocol: HTTP, port: 80}\n---\n"
	      "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
	      "metadata: {name: bad}\nspec:\n  parentRefs: [{name: gw}]\n"
	      "  hostnames: [a.example.com]\n  rules:\n"
	      "  - matches: [{path: {type: Exact, value: /ok}}]\n"
	      "  - matches: [{path: {type: RegularExpression, value: \"/(a\"}}]\n"
	      "---\n"
	      "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
	      "metadata: {name: good}\nspec:\n  parentRefs: [{name: gw}]\n"
	      "  hostnames: [b.example.com]\n",
	      f);
	fclose(f);
	ASSERT_EQ(explain(&out, &errs, args), 0);
	ASSERT_TRUE(!strncmp(out, "default/bad rule 0\n", 19), "%s", out);
	ASSERT_TRUE(strstr(errs, "HTTPRoute default/bad: Dropped Rule 1: ") &&
			    strstr(errs,
				   "all.yaml:16: invalid regular expression"),
		    "%s", errs);
	free(out);
	free(errs);
	ASSERT_EQ(explain(&out, &errs, args2), 0);
	ASSERT_TRUE(!strncmp(out, "default/good rule 0\n", 20), "%s", out);
	free(out);
	free(errs);
}
