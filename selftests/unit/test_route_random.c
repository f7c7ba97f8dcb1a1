// SPDX-License-Identifier: Apache-2.0
/*
 * Random route sets against an independent oracle. Each round writes a
 * Gateway and random HTTPRoutes as YAML, goes through the whole pipeline
 * (doc parse, model, compile, route_match__lookup: BPF replay plus full
 * walk, which fail on any disagreement between the two), and compares the
 * answer with a brute-force reading of the Gateway API precedence list
 * written here from the spec text, not from route_compile.c's order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/source/doc.h"
#include "policy/gateway/gateway_api.h"
#include "policy/gateway/route_compile.h"
#include "policy/gateway/route_match.h"
#include "selftests/unit/test.h"

#define R_MAX     16
#define RULE_MAX  4
#define MATCH_MAX 3

static const char *const paths[] = { "/", "/a", "/a/", "/a/b", "/ab", "/b" };
static const char *const methods[] = { NULL, "GET", "POST" };
static const char *const hosts[] = { "a.test", "b.test", "*.test", "*.x.test" };
static const char *const stamps[] = { NULL, "2024-01-01T00:00:00Z",
				      "2024-02-01T00:00:00Z" };

struct o_match {
	bool exact;
	const char *path;
	const char *method;
	bool hx, hy, q; /* header x: 1, header y: 1, query q=1 */
};

struct o_rule {
	struct o_match m[MATCH_MAX];
	int nm;
};

struct o_route {
	char ns[16], name[16];
	int stamp; /* index into stamps */
	int host;  /* -1: no hostnames */
	struct o_rule r[RULE_MAX];
	int nr;
};

static unsigned int rnd_state;

static unsigned int rnd(unsigned int n)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return (rnd_state >> 16) % n;
}

static void gen_routes(struct o_route *rt, int n)
{
	for (int i = 0; i < n; i++) {
		struct o_route *r = &rt[i];

		snprintf(r->ns, sizeof(r->ns), "%s", rnd(2) ? "a" : "b");
		snprintf(r->name, sizeof(r->name), "r%02u",
			 (unsigned int)i % 100);
		r->stamp = rnd(3);
		r->host = rnd(2) ? (int)rnd(4) : -1;
		r->nr = 1 + rnd(RULE_MAX);
		for (int k = 0; k < r->nr; k++) {
			r->r[k].nm = rnd(MATCH_MAX + 1); /* 0: default match */
			for (int j = 0; j < r->r[k].nm; j++) {
				struct o_match *m = &r->r[k].m[j];

				m->exact = rnd(3) == 0;
				m->path = paths[rnd(6)];
				m->method = methods[rnd(3)];
				m->hx = rnd(3) == 0;
				m->hy = rnd(4) == 0;
				m->q = rnd(4) == 0;
			}
		}
	}
}

static void write_yaml(FILE *f, const struct o_route *rt, int n)
{
	fputs("apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n"
	      "metadata: {name: gw, namespace: infra}\nspec:\n  listeners:\n"
	      "  - name: http\n    protocol: HTTP\n    port: 80\n"
	      "    allowedRoutes: {namespaces: {from: All}}\n",
	      f);
	for (int i = 0; i < n; i++) {
		const struct o_route *r = &rt[i];

		fprintf(f,
			"---\napiVersion: gateway.networking.k8s.io/v1\n"
			"kind: HTTPRoute\nmetadata:\n  name: %s\n"
			"  namespace: %s\n",
			r->name, r->ns);
		if (stamps[r->stamp])
			fprintf(f, "  creationTimestamp: \"%s\"\n",
				stamps[r->stamp]);
		fputs("spec:\n  parentRefs: [{name: gw, namespace: infra}]\n",
		      f);
		if (r->host >= 0)
			fprintf(f, "  hostnames: [\"%s\"]\n", hosts[r->host]);
		fputs("  rules:\n", f);
		for (int k = 0; k < r->nr; k++) {
			fputs("  - backendRefs: [{name: b, port: 80}]\n", f);
			if (!r->r[k].nm)
				continue;
			fputs("    matches:\n", f);
			for (int j = 0; j < r->r[k].nm; j++) {
				const struct o_match *m = &r->r[k].m[j];

				fprintf(f,
					"    - path: {type: %s, value: \"%s\"}\n",
					m->exact ? "Exact" : "PathPrefix",
					m->path);
				if (m->method)
					fprintf(f, "      method: %s\n",
						m->method);
				if (m->hx || m->hy)
					fprintf(f, "      headers:\n%s%s",
						m->hx ? "      - {name: X, "
							"value: \"1\"}\n"
						      : "",
						m->hy ? "      - {name: y, "
							"value: \"1\"}\n"
						      : "");
				if (m->q)
					fputs("      queryParams: [{name: q, "
					      "value: \"1\"}]\n",
					      f);
			}
		}
	}
}

/* ---- the oracle ------------------------------------------------------ */

struct o_req {
	const char *host, *method, *path;
	bool hx, hy, q;
};

static size_t norm_len(const char *p)
{
	size_t n = strlen(p);

	while (n && p[n - 1] == '/')
		n--;
	return n;
}

static bool o_path(const struct o_match *m, const char *path)
{
	size_t n;

	if (m->exact)
		return !strcmp(m->path, path);
	/* "/abc", "/abc/", "/abc/def" match prefix /abc; "/abcd" does not */
	n = norm_len(m->path);
	return !strncmp(path, m->path, n) &&
	       (path[n] == '\0' || path[n] == '/');
}

static bool o_matches(const struct o_match *m, const struct o_req *q)
{
	return o_path(m, q->path) &&
	       (!m->method || !strcmp(m->method, q->method)) &&
	       (!m->hx || q->hx) && (!m->hy || q->hy) && (!m->q || q->q);
}

struct o_cand {
	const struct o_route *r;
	int rule, match;
	const struct o_match *m;
};

/* Is a better than b, per the spec's list, "continuing on ties"? */
static bool o_better(const struct o_cand *a, const struct o_cand *b)
{
	const struct o_match *x = a->m, *y = b->m;
	int c;

	if (x->exact != y->exact)
		return x->exact;
	if (!x->exact && norm_len(x->path) != norm_len(y->path))
		return norm_len(x->path) > norm_len(y->path);
	if (!!x->method != !!y->method)
		return x->method != NULL;
	if (x->hx + x->hy != y->hx + y->hy)
		return x->hx + x->hy > y->hx + y->hy;
	if (x->q != y->q)
		return x->q;
	if (a->r != b->r) {
		char ka[40], kb[40];

		/* oldest; no timestamp counts as newest */
		if (!!a->r->stamp != !!b->r->stamp)
			return a->r->stamp != 0;
		if (a->r->stamp != b->r->stamp)
			return a->r->stamp < b->r->stamp;
		/* ns and name are char[16]: say so, or -O2 warns of a cut */
		snprintf(ka, sizeof(ka), "%.15s/%.15s", a->r->ns, a->r->name);
		snprintf(kb, sizeof(kb), "%.15s/%.15s", b->r->ns, b->r->name);
		c = strcmp(ka, kb);
		return c < 0;
	}
	if (a->rule != b->rule)
		return a->rule < b->rule;
	return a->match < b->match;
}

static const struct o_match default_match = { false, "/", NULL, 0, 0, 0 };

static bool oracle(const struct o_route *rt, int n, const struct o_req *q,
		   struct o_cand *best)
{
	int best_host = -1, best_score = 0;
	bool found = false;

	*best = (struct o_cand){ 0 };
	/*
	 * One vhost per hostname: exact, else the longest "*." suffix that
	 * matches (one or more labels, never the apex), else catch-all; no
	 * fallback to a less specific one.
	 */
	for (int h = 0; h < (int)(sizeof(hosts) / sizeof(hosts[0])); h++) {
		const char *p = hosts[h];
		size_t hl = strlen(q->host), sl = strlen(p) - 1;
		int score = 0;

		if (!strcmp(p, q->host))
			score = 1000;
		else if (p[0] == '*' && hl > sl &&
			 !strcmp(q->host + hl - sl, p + 1))
			score = (int)sl;
		for (int i = 0; score > best_score && i < n; i++)
			if (rt[i].host == h) {
				best_score = score;
				best_host = h;
			}
	}
	for (int i = 0; i < n; i++) {
		const struct o_route *r = &rt[i];

		if (r->host != best_host)
			continue;
		for (int k = 0; k < r->nr; k++) {
			int nm = r->r[k].nm ? r->r[k].nm : 1;

			for (int j = 0; j < nm; j++) {
				struct o_cand c = { r, k, j,
						    r->r[k].nm
							    ? &r->r[k].m[j]
							    : &default_match };

				if (!o_matches(c.m, q))
					continue;
				if (!found || o_better(&c, best))
					*best = c;
				found = true;
			}
		}
	}
	return found;
}

/* ---- the test -------------------------------------------------------- */

static const char *const req_paths[] = { "/",     "/a",  "/a/",  "/a/b",
					 "/a/bc", "/ab", "/b/x", "/c" };
static const char *const req_hosts[] = { "a.test",   "b.test",     "c.test",
					 "y.x.test", "z.y.x.test", "x.test",
					 "test" };
static const char *const req_methods[] = { "GET", "POST", "PUT" };

TEST(route_random_against_oracle)
{
	size_t checked = 0, deferred = 0, sentinels = 0;

	for (unsigned int round = 0; round < 400; round++) {
		struct o_route rt[R_MAX];
		int n = 1 + (int)(round % R_MAX);
		char *yaml = NULL, err[512];
		size_t len = 0;
		FILE *f = open_memstream(&yaml, &len);
		struct doc_file *df = NULL;
		struct gw_model *m = gateway_api__new();
		struct route_table *t = NULL;
		int ret;

		rnd_state = round * 7919u + 1;
		gen_routes(rt, n);
		write_yaml(f, rt, n);
		fclose(f);
		ret = doc__parse_buf("random.yaml", yaml, len, &df, err,
				     sizeof(err));
		for (size_t d = 0; !ret && d < df->ndocs; d++)
			ret = gateway_api__add_doc(m, df->docs[d], err,
						   sizeof(err));
		doc__free_file(df);
		if (!ret)
			ret = route_compile__build(m, "infra/gw", round, &t,
						   err, sizeof(err));
		ASSERT_TRUE(!ret, "round %u: %s\n%s", round, err, yaml);
		for (size_t k = 0; k < t->nroute_keys; k++)
			sentinels += t->route_cands[k].n == MM_ROUTE_CANDS &&
				     t->route_cands[k]
						     .c[MM_ROUTE_CANDS - 1]
						     .route_id ==
					     MM_ROUTE_DEFER;
		for (int i = 0; i < 200; i++) {
			struct o_req q = {
				req_hosts[rnd(7)],
				req_methods[rnd(3)],
				req_paths[rnd(8)],
				rnd(2),
				rnd(2),
				rnd(2),
			};
			char head[512], want[64] = "unmatched", got[64];
			struct route_result res;
			struct http_req req;
			struct o_cand best;
			int hl;

			hl = snprintf(
				head, sizeof(head),
				"%s %s%s HTTP/1.1\r\nHost: %s\r\n%s%s\r\n",
				q.method, q.path, q.q ? "?q=1" : "?q=0", q.host,
				q.hx ? "x: 1\r\n" : "", q.hy ? "Y: 1\r\n" : "");
			ASSERT_EQ(route_match__parse_head(head, (size_t)hl,
							  &req),
				  0);
			ret = route_match__lookup(t, 0, 0, &req, &res);
			ASSERT_TRUE(!ret, "round %u: %s\n%s\n%s", round,
				    res.why, head, yaml);
			if (oracle(rt, n, &q, &best))
				snprintf(want, sizeof(want), "%s/%s rule %d",
					 best.r->ns, best.r->name, best.rule);
			if (res.route_id == MM_ROUTE_UNMATCHED)
				snprintf(got, sizeof(got), "unmatched");
			else
				snprintf(got, sizeof(got), "%s/%s rule %u",
					 t->routes[res.route_id].ns,
					 t->routes[res.route_id].name,
					 res.rule_idx);
			ASSERT_TRUE(!strcmp(got, want),
				    "round %u: got %s, oracle %s\n%s\n%s\n%s",
				    round, got, want, head, res.why, yaml);
			checked++;
			deferred += res.deferred;
		}
		route_compile__free(t);
		gateway_api__free(m);
		free(yaml);
	}
	test_log("%zu random requests agree with the oracle (%zu deferred, "
		 "%zu overflowing candidate lists)\n",
		 checked, deferred, sentinels);
	ASSERT_TRUE(sentinels > 0);
	/* Both paths of the lookup were exercised. */
	ASSERT_TRUE(deferred > checked / 20 &&
			    deferred < checked - checked / 20,
		    "%zu of %zu deferred", deferred, checked);
}
