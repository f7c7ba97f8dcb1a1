// SPDX-License-Identifier: Apache-2.0
/*
 * User-space aggregation capacity: how many ring-buffer events per second
 * one core turns into series updates, through the agent's own code
 * (aggregate.c over route_sync.c's tables, the metric store, optionally the
 * policy engine with the seed's data-plane policies bound).
 *
 * The route table is compiled from generated manifests (--routes HTTPRoutes
 * with several rules, exact and wildcard hostnames) and installed by
 * route_sync into the real BPF maps (loaded, never attached: it needs
 * root but traces nothing). Events are synthetic
 * struct mm_http_event records with a skewed spread of routes, rules,
 * methods and status codes, both legs, log-normal-ish latencies; they are
 * generated before timing and fed through aggregate__event() in batches
 * under the store lock, as the agent's ring-buffer drain does, on one
 * pinned CPU, timed with CLOCK_MONOTONIC.
 *
 * Prints human lines and "figure NAME VALUE" lines for run.sh's report.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "agent/pipeline/aggregate.h"
#include "agent/route_sync.h"
#include "bpf/milometer.h"
#include "policy/model/metric_store.h"
#include "milometer.skel.h"
#include "policy/contract/contract.h"
#include "policy/source/manifest_source.h"
#include "policy/contract/policy_engine.h"
#include "policy/gateway/route_compile.h"

#define NEV_DISTINCT (1u << 18) /* pre-generated events, cycled */
#define BATCH        1024       /* events per store-lock hold */
#define PASSES       5

struct opts {
	unsigned long long events;
	int routes;
	int cpu;
	const char *contract;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* xorshift64*: reproducible, no libc state */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static double rnd01(uint64_t *s)
{
	return (rnd(s) >> 11) * (1.0 / 9007199254740992.0);
}

/*
 * routes HTTPRoutes: most with one exact hostname, every 10th a wildcard;
 * rules: a PathPrefix, an Exact, a POST-only PathPrefix.
 */
static int write_manifests(const char *dir, int routes)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/routes.yaml", dir);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "apiVersion: gateway.networking.k8s.io/v1\n"
		   "kind: Gateway\n"
		   "metadata: {name: gw, namespace: infra}\n"
		   "spec:\n"
		   "  gatewayClassName: milometer\n"
		   "  listeners:\n"
		   "  - {name: http, port: 80, protocol: HTTP, "
		   "allowedRoutes: {namespaces: {from: All}}}\n");
	for (int i = 0; i < routes; i++) {
		fprintf(f,
			"---\n"
			"apiVersion: gateway.networking.k8s.io/v1\n"
			"kind: HTTPRoute\n"
			"metadata: {name: svc-%d, namespace: team-%d, "
			"creationTimestamp: \"2024-01-01T00:00:%02dZ\"}\n"
			"spec:\n"
			"  parentRefs: [{name: gw, namespace: infra}]\n",
			i, i % 10, i % 60);
		if (i % 10 == 9)
			fprintf(f, "  hostnames: [\"*.svc-%d.example.org\"]\n",
				i);
		else
			fprintf(f, "  hostnames: [svc-%d.example.com]\n", i);
		fprintf(f,
			"  rules:\n"
			"  - matches: [{path: {type: PathPrefix, value: /api/v1/items}}]\n"
			"    backendRefs: [{name: items-%d, port: 8080}]\n"
			"  - matches: [{path: {type: Exact, value: /healthz}}]\n"
			"    backendRefs: [{name: health-%d, port: 8080}]\n"
			"  - matches: [{path: {type: PathPrefix, value: /orders}, "
			"method: POST}]\n"
			"    backendRefs: [{name: orders-%d, port: 8080}]\n",
			i, i, i);
	}
	return fclose(f) ? -errno : 0;
}

static int pick(uint64_t *s, const double *w, int n)
{
	double r = rnd01(s);

	for (int i = 0; i < n - 1; i++) {
		if (r < w[i])
			return i;
		r -= w[i];
	}
	return n - 1;
}

/*
 * A skewed mix as a gateway sees it: route popularity ~ 1/(rank+1)
 * (Zipf), mostly GET 200, some 3xx/4xx/5xx, 1 % unmatched, downstream and
 * upstream legs of the same request back to back.
 */
static void gen_events(struct mm_http_event *ev, size_t n,
		       const struct route_table *t)
{
	static const double mw[] = { .70, .18, .05, .03, .02, .02 };
	static const uint8_t mm[] = { MM_M_GET,    MM_M_POST,  MM_M_PUT,
				      MM_M_DELETE, MM_M_PATCH, MM_M_HEAD };
	static const double sw[] = { .80, .04, .03, .04, .05, .01, .02, .01 };
	static const uint16_t sc[] = { 200, 201, 204, 304, 404, 429, 500, 503 };
	double *cdf = calloc(t->nroutes, sizeof(*cdf)), tot = 0;
	uint64_t s = 0x9e3779b97f4a7c15ULL, now = 1700000000000000000ULL;

	for (size_t r = 0; r < t->nroutes; r++)
		cdf[r] = (tot += 1.0 / (r + 1));
	for (size_t i = 0; i + 1 < n; i += 2) {
		struct mm_http_event *d = &ev[i], *u = &ev[i + 1];
		double x = rnd01(&s) * tot, ms;
		size_t lo = 0, hi = t->nroutes - 1;

		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (cdf[mid] < x)
				lo = mid + 1;
			else
				hi = mid;
		}
		memset(d, 0, sizeof(*d));
		d->type = MM_EVT_EXCHANGE;
		d->leg = MM_LEG_DOWNSTREAM;
		d->route_gen = t->gen;
		if (rnd01(&s) < 0.01) {
			d->route_id = MM_ROUTE_UNMATCHED;
			d->method = MM_M_GET;
			d->status = 404;
		} else {
			d->route_id = lo;
			d->rule_idx = rnd(&s) % t->routes[lo].nrules;
			d->method = d->rule_idx == 2 ? MM_M_POST
						     : mm[pick(&s, mw, 6)];
			d->status = sc[pick(&s, sw, 8)];
		}
		if (rnd01(&s) < 0.002)
			d->flags = MM_EV_ABORTED;
		d->tgid = 1000 + rnd(&s) % 2;
		d->conn_id = 1 + rnd(&s) % 5000;
		d->req_seq = i / 2;
		/* log-normal around 20 ms */
		ms = exp(log(20.0) + 1.0 * sqrt(-2 * log(rnd01(&s) + 1e-12)) *
					     cos(2 * M_PI * rnd01(&s)));
		d->start_ns = now + i * 1000;
		d->end_ns = d->start_ns + (uint64_t)(ms * 1e6);
		d->req_bytes = 300 + rnd(&s) % 500;
		d->resp_bytes = 200 + rnd(&s) % 20000;
		*u = *d;
		u->leg = MM_LEG_UPSTREAM;
		u->parent_conn_id = d->conn_id;
		u->parent_seq = d->req_seq;
		u->conn_id = 100000 + rnd(&s) % 64;
		u->start_ns += 50000;
		u->end_ns -= 20000;
	}
	free(cdf);
}

/* Feed count events; returns elapsed ns. */
static uint64_t feed(struct aggregate *ag, struct mstore *st,
		     const struct mm_http_event *ev, unsigned long long count)
{
	uint64_t t0 = mono_ns();
	unsigned long long i = 0;

	while (i < count) {
		unsigned long long end = i + BATCH < count ? i + BATCH : count;

		mstore__lock(st);
		/* one time stamp per batch, as the agent's drain() sets it */
		aggregate__set_now(ag, real_ns());
		for (; i < end; i++)
			aggregate__event(ag, &ev[i & (NEV_DISTINCT - 1)],
					 sizeof(*ev));
		mstore__unlock(st);
	}
	return mono_ns() - t0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct pe_totals {
	uint64_t bindings, records;
};

static void sum_pe(void *ctx, const struct pe_stats *st)
{
	struct pe_totals *t = ctx;

	t->bindings += st->bindings;
	t->records += st->records;
}

/* One measurement with a fresh store (and engine when contract is set). */
static int measure(const struct opts *o, struct route_sync *rs,
		   const struct mm_http_event *ev, const char *mdir,
		   const char *contract_dir, const char *label,
		   const char *figure)
{
	/* as the agent's defaults: --max-series 10000, --series-idle 300 */
	struct mstore_opts so = { .max_series_per_metric = 10000,
				  .idle_expiry_ns = 300ULL * 1000000000ULL };
	struct mstore *st = mstore__new(&so);
	struct manifest_source *src = NULL;
	struct policy_engine *pe = NULL;
	struct contract *c = NULL;
	struct aggregate *ag = NULL;
	struct aggregate_stats as;
	struct mstore_stats ms;
	struct pe_totals pt = {};
	unsigned long long per_pass = o->events / PASSES;
	uint64_t ns, pass[PASSES];
	char err[512];
	int ret = -ENOMEM;

	if (!st)
		goto cleanup;
	if (contract_dir) {
		const char *paths[2] = { mdir, contract_dir };

		src = manifest_source__open_paths(paths, 2, err, sizeof(err));
		if (!src) {
			fprintf(stderr, "bench_aggregate: %s\n", err);
			ret = -EINVAL;
			goto cleanup;
		}
		c = contract__new();
		if (!c)
			goto cleanup;
		contract__load(c, src);
		pe = policy_engine__new(st, c);
		if (!pe)
			goto cleanup;
		policy_engine__sync(pe, src);
	}
	ag = aggregate__new(st, route_sync__table_fn, rs, true);
	if (!ag)
		goto cleanup;
	aggregate__set_engine(ag, pe);
	/* warm: every key of the event mix gets its series and bindings */
	feed(ag, st, ev, NEV_DISTINCT);
	/* PASSES timed passes: the median resists other load on the node */
	for (int i = 0; i < PASSES; i++)
		pass[i] = feed(ag, st, ev, per_pass);
	qsort(pass, PASSES, sizeof(pass[0]), cmp_u64);
	ns = pass[PASSES / 2];
	aggregate__stats(ag, &as);
	mstore__stats(st, &ms);
	if (pe)
		policy_engine__stats(pe, sum_pe, &pt);
	printf("%s: %d passes of %llu events on CPU %d, median %.2f M "
	       "events/s (%.1f ns/event; passes %.2f..%.2f M/s), %.2f M "
	       "proxied requests/s at 2 events each\n",
	       label, PASSES, per_pass, sched_getcpu(), per_pass / (ns / 1e3),
	       (double)ns / per_pass, per_pass / (pass[PASSES - 1] / 1e3),
	       per_pass / (pass[0] / 1e3), per_pass / (ns / 1e3) / 2);
	printf("  %llu keys, %llu series active, %llu overflowed",
	       (unsigned long long)as.keys,
	       (unsigned long long)ms.series_active,
	       (unsigned long long)ms.series_overflowed);
	if (pe)
		printf(", %llu policy target series bound, %llu records",
		       (unsigned long long)pt.bindings,
		       (unsigned long long)pt.records);
	printf("\n");
	printf("figure %s %.0f\n", figure, per_pass / (ns / 1e9));
	ret = 0;
cleanup:
	aggregate__free(ag);
	if (pe)
		policy_engine__free(pe);
	contract__free(c);
	manifest_source__free(src);
	mstore__free(st);
	return ret;
}

/*
 * Only the maps: route_sync writes the table into them; no program is
 * loaded. (Loading every program failed with EINVAL: the two capture modes'
 * hooks share one tail-call map, which on 6.18 takes tracing programs of
 * one hook only; the agent loads one mode's.)
 */
static struct milometer_bpf *open_maps(void)
{
	struct milometer_bpf *skel = milometer_bpf__open();
	struct bpf_program *prog;

	if (!skel)
		return NULL;
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, false);
	if (milometer_bpf__load(skel)) {
		milometer_bpf__destroy(skel);
		return NULL;
	}
	return skel;
}

static int silent(enum libbpf_print_level l, const char *f, va_list ap)
{
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: bench_aggregate [--events N] [--routes N] [--cpu N] "
		"[--contract DIR]\n\n"
		"Events/s of the agent's user-space aggregation on one CPU, "
		"without and (with\n--contract, e.g. deploy/examples/contract) "
		"with the policy engine bound.\nNeeds root: the route table "
		"goes into real BPF maps.\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "events", required_argument, NULL, 'e' },
		{ "routes", required_argument, NULL, 'r' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "contract", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct opts o = { .events = 20000000, .routes = 200, .cpu = -1 };
	char dir[] = "/tmp/mm-bench-agg.XXXXXX", err[512], path[4200];
	struct milometer_bpf *skel = NULL;
	struct route_sync *rs = NULL;
	const struct route_table *t;
	struct mm_http_event *ev = NULL;
	cpu_set_t set;
	int c, ret = 1;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'e':
			o.events = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			o.routes = atoi(optarg);
			break;
		case 'c':
			o.cpu = atoi(optarg);
			break;
		case 'p':
			o.contract = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (o.events < (unsigned long long)PASSES * NEV_DISTINCT ||
	    o.routes < 1) {
		fprintf(stderr,
			"bench_aggregate: --events must be >= %u and "
			"--routes >= 1\n",
			PASSES * NEV_DISTINCT);
		return 2;
	}
	if (o.contract && access(o.contract, R_OK)) {
		fprintf(stderr,
			"bench_aggregate: no contract at %s; "
			"measuring without the policy engine only\n",
			o.contract);
		o.contract = NULL;
	}
	if (o.cpu < 0)
		o.cpu = sched_getcpu();
	CPU_ZERO(&set);
	CPU_SET(o.cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("bench_aggregate: sched_setaffinity");
		return 1;
	}
	libbpf_set_print(silent);
	if (!mkdtemp(dir)) {
		perror("bench_aggregate: mkdtemp");
		return 1;
	}
	if (write_manifests(dir, o.routes)) {
		fprintf(stderr, "bench_aggregate: cannot write %s\n", dir);
		goto cleanup;
	}
	skel = open_maps();
	if (!skel) {
		fprintf(stderr,
			"bench_aggregate: cannot create the BPF maps "
			"(%s): run as root\n",
			strerror(errno));
		goto cleanup;
	}
	rs = route_sync__new(skel, dir, NULL);
	if (!rs || route_sync__load(rs, err, sizeof(err))) {
		fprintf(stderr, "bench_aggregate: route table: %s\n",
			rs ? err : "out of memory");
		goto cleanup;
	}
	t = route_sync__current(rs);
	ev = calloc(NEV_DISTINCT, sizeof(*ev));
	if (!ev)
		goto cleanup;
	gen_events(ev, NEV_DISTINCT, t);
	printf("route table: %zu HTTPRoutes, %zu virtual hosts, %zu BPF "
	       "route keys; %u distinct events cycled, batches of %d under "
	       "the store lock\n",
	       t->nroutes, t->nvhosts, t->nroute_keys, NEV_DISTINCT, BATCH);
	if (measure(&o, rs, ev, dir, NULL, "aggregate, sources only",
		    "aggregate_events_per_s"))
		goto cleanup;
	if (o.contract &&
	    measure(&o, rs, ev, dir, o.contract,
		    "aggregate + policy engine (seed data-plane policies)",
		    "aggregate_policy_events_per_s"))
		goto cleanup;
	ret = 0;
cleanup:
	free(ev);
	route_sync__free(rs);
	if (skel)
		milometer_bpf__destroy(skel);
	snprintf(path, sizeof(path), "%s/routes.yaml", dir);
	unlink(path);
	rmdir(dir);
	return ret;
}
