// SPDX-License-Identifier: Apache-2.0
/*
 * Cost per scrape of --metrics-auth kubernetes (agent/authz/authz.c): the
 * reviews one /metrics request sends for N tenant namespaces x M HTTPRoutes
 * each, with and without cached decisions, and the time it takes against
 * the API server named by the kubeconfig (selftests/bench/authz.sh starts
 * the test API server with the users this expects). The scrape goes through
 * the same hooks the Prometheus server calls (begin/keep/end).
 *
 *   bench_authz --kubeconfig FILE [--tenants N] [--routes M]
 *
 * Callers (tokens the API server must know):
 *   tok-full    get on /metrics: everything, one review
 *   tok-ns      get httproutes in namespace t0: one namespace-wide review
 *               per namespace, none per object
 *   tok-names   get on each route of t0 by name only: in every namespace
 *               the namespace-wide review is denied, so every object is
 *               asked by name (the worst case: 2 + N + N x M reviews)
 *   tok-none    nothing: every review denied, 403 (also 2 + N + N x M)
 * Prints "reviews/scrape" and "ms/scrape" per caller, first cold (no
 * decision cached) then warm (within the TTL).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/authz/authz.h"
#include "agent/k8s/config.h"
#include "policy/model/metric_store.h"
#include "exporter/prom_server.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t reviews(struct k8s_authz *a)
{
	struct k8s_authz_stats st;

	k8s_authz__stats(a, &st);
	return st.token_reviews + st.access_reviews;
}

/* One scrape as the server makes it: begin, keep() per bound series, end. */
static int scrape(struct k8s_authz *a, struct mstore *s, const char *tok,
		  char **subs, long nsubs, long *kept)
{
	const struct prom_auth *h = k8s_authz__prom_auth(a);
	char hdr[128], msg[512];
	void *access = NULL;
	int st;

	snprintf(hdr, sizeof(hdr), "Bearer %s", tok);
	st = h->begin(h->ctx, s, hdr, &access, msg, sizeof(msg));
	*kept = 0;
	if (st == 200 && !access)
		*kept = nsubs;
	for (long i = 0; st == 200 && access && i < nsubs; i++)
		*kept += h->keep(access, subs[i]);
	if (access)
		h->end(access);
	return st;
}

int main(int argc, char **argv)
{
	const char *kc = NULL;
	long tenants = 10, routes = 20;
	struct mmetric_desc d = { .name = "envoy.http.downstream_rq_total",
				  .instrument = MI_COUNTER,
				  .is_int = true };
	static const char *const callers[] = { "tok-full", "tok-ns",
					       "tok-names", "tok-none" };
	/* no budget: the cold figure is the whole review bill */
	struct k8s_authz_opts ao = { .user_agent = "bench-authz",
				     .ttl_s = 300,
				     .budget_ms = 3600000 };
	struct k8s_config *cfg = NULL;
	struct mstore *s;
	char err[1024], **subs = NULL;
	long nsubs;
	int id;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--kubeconfig") && i + 1 < argc)
			kc = argv[++i];
		else if (!strcmp(argv[i], "--tenants") && i + 1 < argc)
			tenants = atol(argv[++i]);
		else if (!strcmp(argv[i], "--routes") && i + 1 < argc)
			routes = atol(argv[++i]);
		else {
			fprintf(stderr,
				"usage: bench_authz --kubeconfig FILE [--tenants N] [--routes M]\n");
			return 2;
		}
	}
	if (k8s_config__load(kc, &cfg, err, sizeof(err))) {
		fprintf(stderr, "bench_authz: %s\n", err);
		return 1;
	}
	s = mstore__new(NULL);
	id = mstore__add_metric(s, &d);
	mstore__lock(s);
	for (long t = 0; t < tenants; t++) {
		for (long r = 0; r < routes; r++) {
			char ns[32], name[32], subj[128];
			struct mlabel l[2] = { { "k8s.namespace.name", ns },
					       { "k8s.httproute.name", name } };
			struct mseries *ser;

			snprintf(ns, sizeof(ns), "t%ld", t);
			snprintf(name, sizeof(name), "r%ld", r);
			ser = mstore__series(s, id, l, 2);
			msubject__format(subj, sizeof(subj),
					 "gateway.networking.k8s.io",
					 "httproutes", ns, name);
			mstore__bind(s, ser, subj);
			mseries__add(ser, 1, 1);
		}
	}
	mstore__unlock(s);
	nsubs = mstore__subjects(s, &subs);
	printf("authz: %ld tenant namespaces x %ld routes = %ld objects\n",
	       tenants, routes, nsubs);
	printf("%-10s %-5s %6s %8s %8s %10s\n", "caller", "cache", "status",
	       "kept", "reviews", "ms/scrape");
	for (size_t c = 0; c < sizeof(callers) / sizeof(callers[0]); c++) {
		/* a fresh cache per caller: the cold figure is its own */
		struct k8s_authz *a;

		ao.cfg = cfg;
		ao.max_entries = (uint32_t)(4 * nsubs + 64);
		a = k8s_authz__new(&ao, err, sizeof(err));
		if (!a) {
			fprintf(stderr, "bench_authz: %s\n", err);
			return 1;
		}
		for (int warm = 0; warm < 2; warm++) {
			uint64_t r0 = reviews(a);
			double t0 = now_ms();
			long kept;
			int st = scrape(a, s, callers[c], subs, nsubs, &kept);

			printf("%-10s %-5s %6d %8ld %8llu %10.2f\n", callers[c],
			       warm ? "warm" : "cold", st, kept,
			       (unsigned long long)(reviews(a) - r0),
			       now_ms() - t0);
		}
		k8s_authz__free(a);
	}
	for (long i = 0; i < nsubs; i++)
		free(subs[i]);
	free(subs);
	mstore__free(s);
	k8s_config__free(cfg);
	return 0;
}
