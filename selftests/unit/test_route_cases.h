/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gateway API precedence, one case per line, on
 * selftests/unit/testdata/routes/precedence: the one table that the user-space
 * lookup (unit test route_precedence_cases) and the kernel's
 * (selftests/bpf/test_bpf_route.c, through the real maps) are both held
 * to. Each case says the answer and whether the kernel table decides it or
 * hands the head to user space; some exist for the kernel's reading of the
 * head (word-at-a-time host and query copies, host lengths around
 * MM_HOST_MAX), and user space must still agree on them.
 */
#ifndef MM_TEST_ROUTE_CASES_H
#define MM_TEST_ROUTE_CASES_H

enum bpf_says { KERNEL, DEFER };

struct rcase {
	const char *what;
	const char *method, *host, *target, *headers;
	const char *want; /* "ns/name rule N" or "unmatched" */
	enum bpf_says bpf;
};

#define A10  "aaaaaaaaaa"
#define A100 A10 A10 A10 A10 A10 A10 A10 A10 A10 A10

static const struct rcase route_cases[] = {
	/* Hostnames */
	{ "exact vhost", "GET", "www.example.com", "/x", "",
	  "apps/login rule 1", KERNEL },
	{ "port in Host ignored", "GET", "www.example.com:8080", "/login", "",
	  "apps/login rule 0", KERNEL },
	{ "host case-insensitive", "GET", "WWW.Example.COM", "/login", "",
	  "apps/login rule 0", KERNEL },
	{ "trailing dot", "GET", "www.example.com.", "/login", "",
	  "apps/login rule 0", KERNEL },
	{ "route hostname lower-cased", "GET", "api.example.com", "/v1/a", "",
	  "apps/apihost rule 0", KERNEL },
	{ "wildcard one label", "GET", "foo.example.com", "/x", "",
	  "apps/wild rule 0", KERNEL },
	{ "wildcard two labels", "GET", "a.b.example.com", "/", "",
	  "apps/wild rule 0", KERNEL },
	{ "longer wildcard wins", "GET", "x.eu.example.com", "/", "",
	  "apps/deepwild rule 0", KERNEL },
	{ "longer wildcard, two labels", "GET", "a.b.eu.example.com", "/", "",
	  "apps/deepwild rule 0", KERNEL },
	{ "wildcard never the apex", "GET", "eu.example.com", "/", "",
	  "apps/wild rule 0", KERNEL },
	{ "apex not in *.example.com", "GET", "example.com", "/healthz", "",
	  "apps/catchall rule 0", KERNEL },
	{ "no fallback from exact vhost", "GET", "api.example.com", "/other",
	  "", "unmatched", KERNEL },
	{ "catch-all vhost", "GET", "unknown.org", "/healthz", "",
	  "apps/catchall rule 0", KERNEL },
	{ "catch-all, no rule", "GET", "unknown.org", "/foo", "", "unmatched",
	  KERNEL },
	{ "sectionName keeps catch-all off *.example.com", "GET",
	  "foo.example.com", "/healthz", "", "apps/wild rule 0", KERNEL },
	{ "allowedRoutes Same: same namespace attached", "GET", "same.test",
	  "/other", "", "infra/samens rule 0", KERNEL },
	{ "allowedRoutes Selector: namespace not selected", "GET", "sel.test",
	  "/", "", "unmatched", KERNEL },
	{ "allowedRoutes Selector: matchLabels selects", "GET", "sel.test",
	  "/ok", "", "teama/selok rule 0", KERNEL },
	{ "allowedRoutes Selector: matchExpressions select", "GET", "selx.test",
	  "/db", "", "teama/selx rule 0", KERNEL },
	{ "HTTPS listener", "GET", "secure.test", "/a", "",
	  "apps/secure rule 0", KERNEL },
	{ "no intersection: not attached", "GET", "other.org", "/healthz", "",
	  "apps/catchall rule 0", KERNEL },
	{ "empty first label", "GET", ".example.com", "/healthz", "",
	  "apps/catchall rule 0", KERNEL },
	{ "wildcard, upper case, whole words", "GET", "NEWS.AB.EU.EXAMPLE.COM",
	  "/", "", "apps/deepwild rule 0", KERNEL },
	{ "host of 128 bytes, the most the kernel reads", "GET",
	  A100 "aaaaaaaaaaaaaaaa.example.com", "/x", "", "apps/wild rule 0",
	  KERNEL },
	{ "host of 129 bytes: user space", "GET",
	  A100 "aaaaaaaaaaaaaaaaa.example.com", "/x", "", "apps/wild rule 0",
	  DEFER },
	/*
	 * One more space before the value: its words start at host lengths
	 * 7, 15, ... 127, where a word no longer fits in host[] (what follows it
	 * in mm_scratch, the window loop's state, would take its last 7 bytes).
	 */
	{ "host of 136 bytes, words at odd lengths: user space", "GET",
	  " " A100 "aaaaaaaaaaaaaaaaaaaaaaaa.example.com", "/x", "",
	  "apps/wild rule 0", DEFER },
	{ "two spaces before the host: OWS in a word", "GET",
	  " www.example.com", "/x", "", "apps/login rule 1", KERNEL },
	{ "port in a whole word of its own", "GET", "www.example.com:12345678",
	  "/login", "", "apps/login rule 0", KERNEL },
	{ "no Host header", "GET", NULL, "/healthz", "", "apps/catchall rule 0",
	  KERNEL },
	/* Paths */
	{ "Exact beats PathPrefix", "GET", "www.example.com", "/login", "",
	  "apps/login rule 0", KERNEL },
	{ "Exact needs the whole path", "GET", "www.example.com", "/login/", "",
	  "apps/login rule 1", KERNEL },
	{ "query is not part of the path", "GET", "www.example.com",
	  "/login?next=/", "", "apps/login rule 0", KERNEL },
	{ "longest prefix", "GET", "www.example.com", "/api/v2/users", "",
	  "apps/api rule 1", KERNEL },
	{ "prefix trailing slash ignored", "GET", "www.example.com", "/api/v2",
	  "", "apps/api rule 1", KERNEL },
	{ "prefix with trailing slash", "GET", "www.example.com", "/api/v2/",
	  "", "apps/api rule 1", KERNEL },
	{ "element-wise: /api/v2x", "POST", "www.example.com", "/api/v2x", "",
	  "apps/api rule 2", KERNEL },
	{ "element-wise: /apix is not /api", "GET", "www.example.com", "/apix",
	  "", "apps/login rule 1", KERNEL },
	{ "paths case-sensitive", "GET", "www.example.com", "/Api/x", "",
	  "apps/api rule 6", KERNEL },
	{ "paths case-sensitive 2", "GET", "www.example.com", "/API", "",
	  "apps/login rule 1", KERNEL },
	/* Method, headers, query */
	{ "method beats headers", "POST", "www.example.com", "/api/x",
	  "X-Canary: true\r\nX-Env: prod\r\n", "apps/api rule 2", KERNEL },
	{ "two headers beat one", "GET", "www.example.com", "/api/x",
	  "x-env: prod\r\nx-canary: true\r\n", "apps/api rule 3", DEFER },
	{ "header names case-insensitive", "GET", "www.example.com", "/api",
	  "X-CANARY: true\r\n", "apps/api rule 4", DEFER },
	{ "header values case-sensitive", "GET", "www.example.com", "/api",
	  "X-Canary: TRUE\r\n", "apps/api rule 0", DEFER },
	{ "header beats query", "GET", "www.example.com", "/api/q?debug=1",
	  "X-Canary: true\r\n", "apps/api rule 4", DEFER },
	{ "query match", "GET", "www.example.com", "/api/q?a=2&debug=1", "",
	  "apps/api rule 5", DEFER },
	{ "long query, copied a word at a time", "GET", "www.example.com",
	  "/api?utm_source=newsletter&utm_medium=e%2Dmail&utm_campaign=2026-11&debug=1",
	  "", "apps/api rule 5", DEFER },
	{ "long query, not a match", "GET", "www.example.com",
	  "/login?next=%2Fcheckout%3Fstep%3D2&utm_source=newsletter&x=y", "",
	  "apps/login rule 0", KERNEL },
	{ "query names case-sensitive", "GET", "www.example.com",
	  "/api/q?DEBUG=1", "", "apps/api rule 0", DEFER },
	{ "query first occurrence", "GET", "www.example.com",
	  "/api/q?debug=2&debug=1", "", "apps/api rule 0", DEFER },
	{ "plain rule after conditional ones", "GET", "www.example.com",
	  "/api/x", "", "apps/api rule 0", DEFER },
	{ "header regex", "GET", "www.example.com", "/api/re", "X-Ver: v12\r\n",
	  "apps/api rule 7", DEFER },
	{ "header regex is a full match", "GET", "www.example.com", "/api/re",
	  "X-Ver: v12b\r\n", "apps/api rule 0", DEFER },
	/* Ties */
	{ "oldest route", "GET", "www.example.com", "/shared/a", "",
	  "apps/older rule 0", KERNEL },
	{ "same age: alphabetical", "GET", "www.example.com", "/tie", "",
	  "apps/a-tie rule 0", KERNEL },
	{ "timestamp beats none", "GET", "www.example.com", "/notime", "",
	  "apps/d-time rule 0", KERNEL },
	{ "first rule in the route", "GET", "www.example.com", "/dup/x", "",
	  "apps/login rule 2", KERNEL },
	/* RegularExpression paths: Exact > regex (longer first) > Prefix */
	{ "regex: Exact still first", "GET", "re.example.com", "/items/special",
	  "", "apps/regex rule 2", KERNEL },
	{ "regex beats prefix", "GET", "re.example.com", "/items/42", "",
	  "apps/regex rule 0", DEFER },
	{ "longer regex first", "GET", "re.example.com", "/items/42/detail", "",
	  "apps/regex rule 3", DEFER },
	{ "regex full match, prefix decides", "GET", "re.example.com",
	  "/items/42x", "", "apps/regex rule 1", DEFER },
	{ "regex vhost, unmatched", "GET", "re.example.com", "/itemsx", "",
	  "unmatched", DEFER },
	/* Candidate list overflow (9 methods for one prefix) */
	{ "overflow: early method in BPF", "GET", "many.test", "/m", "",
	  "apps/many rule 0", KERNEL },
	{ "overflow: 7th method in BPF", "OPTIONS", "many.test", "/m", "",
	  "apps/many rule 6", KERNEL },
	{ "overflow: sentinel defers", "PATCH", "many.test", "/m/x", "",
	  "apps/many rule 8", DEFER },
	{ "overflow: sentinel defers 2", "TRACE", "many.test", "/m", "",
	  "apps/many rule 7", DEFER },
	{ "unknown method: no method rule fits", "PROPFIND", "many.test", "/m",
	  "", "unmatched", DEFER },
	{ "second match of a rule", "POST", "many.test", "/x", "",
	  "apps/many rule 9", KERNEL },
	/* Deep prefixes: BPF defers only when the path is deeper still */
	{ "deep vhost, shallow path", "GET", "deep.test", "/a/b", "",
	  "apps/deep rule 0", KERNEL },
	{ "deep prefix, path equal to it", "GET", "deep.test",
	  "/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16", "", "apps/deep rule 1",
	  KERNEL },
	{ "deep prefix, deeper path", "GET", "deep.test",
	  "/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17", "", "apps/deep rule 1",
	  DEFER },
	{ "deep vhost, deep path, no match", "GET", "deep.test",
	  "/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/x/17", "", "unmatched", DEFER },
	/* What BPF leaves to user space before any lookup */
	{ "asterisk-form target", "OPTIONS", "www.example.com", "*", "",
	  "unmatched", DEFER },
	{ "absolute-form target", "GET", "ignored.test",
	  "http://www.example.com/login", "", "apps/login rule 0", DEFER },
	{ "Host longer than MM_HOST_MAX", "GET",
	  "a123456789a123456789a123456789a123456789a123456789a123456789"
	  "a123456789a123456789a123456789a123456789a123456789a123456789"
	  ".example.com",
	  "/", "", "apps/wild rule 0", DEFER },
};

#endif /* MM_TEST_ROUTE_CASES_H */
