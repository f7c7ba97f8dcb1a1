// SPDX-License-Identifier: Apache-2.0
/* Metric store semantics: registration, series identity, cardinality cap,
 * idle expiry, hold/release, delta vs cumulative views and start times. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "policy/model/metric_store.h"
#include "exporter/prom_text.h"
#include "selftests/unit/test.h"

#define SEC 1000000000ull

struct seen_point {
	char labels[256]; /* k=v,k=v */
	uint64_t start_ns, time_ns;
	double value;
	int64_t ivalue;
	uint64_t count;
	double sum;
};

struct seen {
	const char *want; /* metric name to capture */
	int visits;       /* times the metric was visited */
	enum mtemporality temporality;
	size_t n;
	struct seen_point p[64];
};

static int capture(void *ctx, const struct mmetric_desc *desc,
		   const struct mpoint_view *pts, size_t n)
{
	struct seen *s = ctx;
	size_t i, j;

	if (strcmp(desc->name, s->want))
		return 0;
	s->visits++;
	s->temporality = desc->temporality;
	s->n = 0;
	for (i = 0; i < n && i < 64; i++) {
		struct seen_point *p = &s->p[s->n++];
		size_t off = 0;

		p->labels[0] = 0;
		for (j = 0; j < pts[i].nlabels; j++)
			off += snprintf(p->labels + off,
					sizeof(p->labels) - off, "%s%s=%s",
					j ? "," : "", pts[i].labels[j].key,
					pts[i].labels[j].value);
		p->start_ns = pts[i].start_ns;
		p->time_ns = pts[i].time_ns;
		p->value = pts[i].value;
		p->ivalue = pts[i].ivalue;
		p->count = pts[i].count;
		p->sum = pts[i].sum;
	}
	return 0;
}

static int collect(struct mstore *st, enum mtemporality view, uint64_t now,
		   const char *name, struct seen *out)
{
	memset(out, 0, sizeof(*out));
	out->want = name;
	return mstore__collect(st, view, now, capture, out);
}

static const struct mmetric_desc counter = {
	.name = "http.server.requests",
	.description = "Requests.",
	.unit = "{request}",
	.instrument = MI_COUNTER,
	.temporality = MT_CUMULATIVE,
};

TEST(mstore_register)
{
	struct mstore *st = mstore__new(NULL);
	struct mmetric_desc d = counter;
	double bad[] = { 1, 1 };
	int id, id2;

	id = mstore__add_metric(st, &counter);
	ASSERT_TRUE(id >= 0);
	ASSERT_EQ(mstore__add_metric(st, &counter), id);
	ASSERT_EQ(mstore__find_metric(st, "http.server.requests"), id);
	ASSERT_EQ(mstore__find_metric(st, "nope"), -ENOENT);
	d.unit = "s";
	ASSERT_EQ(mstore__add_metric(st, &d), -EEXIST);
	d = counter;
	d.name = "h";
	d.instrument = MI_HISTOGRAM;
	d.bounds = bad;
	d.nbounds = 2;
	ASSERT_EQ(mstore__add_metric(st, &d), -EINVAL);
	d.name = "";
	ASSERT_EQ(mstore__add_metric(st, &d), -EINVAL);
	ASSERT_EQ(mstore__remove_metric(st, id), 0);
	ASSERT_EQ(mstore__remove_metric(st, id), -ENOENT);
	ASSERT_EQ(mstore__find_metric(st, "http.server.requests"), -ENOENT);
	/* re-adding gives a fresh id: stale ids never alias */
	id2 = mstore__add_metric(st, &counter);
	ASSERT_TRUE(id2 >= 0 && id2 != id);
	mstore__lock(st);
	ASSERT_TRUE(mstore__series(st, id, NULL, 0) == NULL);
	mstore__unlock(st);
	mstore__free(st);
}

TEST(mstore_series_identity)
{
	struct mstore *st = mstore__new(NULL);
	int id = mstore__add_metric(st, &counter);
	struct mlabel a[] = { { "route", "r1" }, { "code", "200" } };
	struct mlabel b[] = { { "code", "200" }, { "route", "r1" } };
	struct mlabel dup[] = { { "code", "500" },
				{ "route", "r1" },
				{ "code", "200" } };
	struct mlabel c[] = { { "code", "500" }, { "route", "r1" } };
	struct mseries *sa, *sb, *sc;
	struct seen seen;

	mstore__lock(st);
	sa = mstore__series(st, id, a, 2);
	sb = mstore__series(st, id, b, 2);
	ASSERT_TRUE(sa && sa == sb);
	ASSERT_TRUE(mstore__series(st, id, dup, 3) == sa, "last key wins");
	sc = mstore__series(st, id, c, 2);
	ASSERT_TRUE(sc && sc != sa);
	mseries__add(sa, 2, 10 * SEC);
	mseries__add(sb, 3, 11 * SEC);
	mseries__add(sc, 1, 12 * SEC);
	mseries__add(sc, -5, 12 * SEC); /* counters ignore negative adds */
	mstore__unlock(st);

	ASSERT_EQ(collect(st, MT_CUMULATIVE, 20 * SEC, counter.name, &seen), 0);
	ASSERT_EQ(seen.n, 2);
	/* sorted by label set */
	ASSERT_STREQ(seen.p[0].labels, "code=200,route=r1");
	ASSERT_EQ(seen.p[0].value, 5);
	ASSERT_EQ(seen.p[0].start_ns, 10 * SEC);
	ASSERT_EQ(seen.p[0].time_ns, 20 * SEC);
	ASSERT_STREQ(seen.p[1].labels, "code=500,route=r1");
	ASSERT_EQ(seen.p[1].value, 1);
	mstore__free(st);
}

TEST(mstore_series_without_data_not_reported)
{
	struct mstore *st = mstore__new(NULL);
	int id = mstore__add_metric(st, &counter);
	struct seen seen;

	mstore__lock(st);
	ASSERT_TRUE(mstore__series(st, id, NULL, 0) != NULL);
	mstore__unlock(st);
	ASSERT_EQ(collect(st, MT_CUMULATIVE, SEC, counter.name, &seen), 0);
	ASSERT_EQ(seen.visits, 0);
	mstore__free(st);
}

TEST(mstore_cap_overflow)
{
	struct mstore_opts o = { .max_series_per_metric = 4 };
	struct mstore *st = mstore__new(&o);
	int id = mstore__add_metric(st, &counter), i;
	struct mstore_stats stats;
	struct mseries *ser[6];
	struct seen seen;
	char v[6][16];

	mstore__lock(st);
	for (i = 0; i < 6; i++) {
		struct mlabel l = { "route", v[i] };

		snprintf(v[i], sizeof(v[i]), "r%d", i);
		ser[i] = mstore__series(st, id, &l, 1);
		ASSERT_TRUE(ser[i]);
		mseries__add(ser[i], i + 1, SEC);
	}
	mstore__unlock(st);
	/* limit 4 = 3 label sets + the overflow series */
	ASSERT_TRUE(ser[3] == ser[4] && ser[4] == ser[5]);
	ASSERT_TRUE(ser[2] != ser[3]);
	mstore__lock(st);
	{
		struct mlabel l = { "route", "r1" };

		ASSERT_TRUE(mstore__series(st, id, &l, 1) == ser[1],
			    "existing series stay reachable past the cap");
	}
	mstore__unlock(st);
	mstore__stats(st, &stats);
	ASSERT_EQ(stats.series_active, 4);
	ASSERT_EQ(stats.series_overflowed, 3);
	ASSERT_EQ(collect(st, MT_CUMULATIVE, 2 * SEC, counter.name, &seen), 0);
	ASSERT_EQ(seen.n, 4);
	ASSERT_STREQ(seen.p[0].labels, "otel.metric.overflow=true");
	ASSERT_EQ(seen.p[0].value, 4 + 5 + 6);
	ASSERT_STREQ(seen.p[3].labels, "route=r2");
	mstore__free(st);
}

TEST(mstore_idle_expiry_and_hold)
{
	struct mstore_opts o = { .idle_expiry_ns = 10 * SEC };
	struct mstore *st = mstore__new(&o);
	int id = mstore__add_metric(st, &counter);
	struct mlabel la = { "route", "a" }, lb = { "route", "b" },
		      lc = { "route", "c" };
	struct mseries *a, *b, *c;
	struct mstore_stats stats;
	struct seen seen;

	mstore__lock(st);
	a = mstore__series(st, id, &la, 1);
	b = mstore__series(st, id, &lb, 1);
	c = mstore__series(st, id, &lc, 1);
	mstore__hold(c);
	mseries__add(a, 1, 100 * SEC);
	mseries__add(b, 1, 108 * SEC);
	mseries__add(c, 1, 100 * SEC);
	mstore__unlock(st);

	ASSERT_EQ(collect(st, MT_CUMULATIVE, 115 * SEC, counter.name, &seen),
		  0);
	ASSERT_EQ(seen.n, 2); /* a expired; b recent; c held */
	ASSERT_STREQ(seen.p[0].labels, "route=b");
	ASSERT_STREQ(seen.p[1].labels, "route=c");
	mstore__stats(st, &stats);
	ASSERT_EQ(stats.series_expired, 1);
	ASSERT_EQ(stats.series_active, 2);

	mstore__lock(st);
	mstore__release(st, c);
	/* a comes back as a new series with a new start time */
	a = mstore__series(st, id, &la, 1);
	mseries__add(a, 7, 116 * SEC);
	mstore__unlock(st);
	ASSERT_EQ(collect(st, MT_CUMULATIVE, 125 * SEC, counter.name, &seen),
		  0);
	ASSERT_EQ(seen.n, 1);
	ASSERT_STREQ(seen.p[0].labels, "route=a");
	ASSERT_EQ(seen.p[0].value, 7);
	ASSERT_EQ(seen.p[0].start_ns, 116 * SEC);
	mstore__stats(st, &stats);
	ASSERT_EQ(stats.series_expired, 3);
	mstore__free(st);
}

TEST(mstore_remove_metric_keeps_held_series)
{
	struct mstore *st = mstore__new(NULL);
	int id = mstore__add_metric(st, &counter);
	struct mlabel l = { "route", "a" };
	struct mseries *a, *b;
	struct mstore_stats stats;
	struct seen seen;

	mstore__lock(st);
	a = mstore__series(st, id, &l, 1);
	b = mstore__series(st, id, NULL, 0);
	mseries__add(b, 1, SEC);
	mstore__hold(a);
	mstore__unlock(st);
	ASSERT_EQ(mstore__remove_metric(st, id), 0);
	mstore__stats(st, &stats);
	ASSERT_EQ(stats.series_active, 0);
	mstore__lock(st);
	/* still valid memory (ASan would object otherwise), not exported */
	mseries__add(a, 5, 2 * SEC);
	mstore__unlock(st);
	ASSERT_EQ(collect(st, MT_CUMULATIVE, 3 * SEC, counter.name, &seen), 0);
	ASSERT_EQ(seen.visits, 0);
	mstore__lock(st);
	mstore__release(st, a); /* frees series and metric: LeakSanitizer */
	mstore__unlock(st);
	mstore__free(st);
}

TEST(mstore_delta_and_cumulative_views)
{
	struct mstore_opts o = { .keep_delta = true };
	struct mstore *st = mstore__new(&o);
	struct mmetric_desc d = counter;
	struct mseries *ser;
	struct seen seen;
	int id;

	d.temporality = MT_DELTA;
	id = mstore__add_metric(st, &d);
	mstore__lock(st);
	ser = mstore__series(st, id, NULL, 0);
	mseries__add(ser, 5, 10 * SEC);
	mstore__unlock(st);

	ASSERT_EQ(collect(st, MT_DELTA, 20 * SEC, d.name, &seen), 0);
	ASSERT_EQ(seen.temporality, MT_DELTA);
	ASSERT_EQ(seen.n, 1);
	ASSERT_EQ(seen.p[0].value, 5);
	ASSERT_EQ(seen.p[0].start_ns, 10 * SEC);
	ASSERT_EQ(seen.p[0].time_ns, 20 * SEC);

	mstore__lock(st);
	mseries__add(ser, 3, 25 * SEC);
	mstore__unlock(st);
	/* Prometheus reads the accumulated total without disturbing delta */
	ASSERT_EQ(collect(st, MT_CUMULATIVE, 27 * SEC, d.name, &seen), 0);
	ASSERT_EQ(seen.temporality, MT_CUMULATIVE);
	ASSERT_EQ(seen.p[0].value, 8);
	ASSERT_EQ(seen.p[0].start_ns, 10 * SEC);

	ASSERT_EQ(collect(st, MT_DELTA, 30 * SEC, d.name, &seen), 0);
	ASSERT_EQ(seen.p[0].value, 3);
	ASSERT_EQ(seen.p[0].start_ns, 20 * SEC); /* previous collection */
	/* nothing new: no delta point */
	ASSERT_EQ(collect(st, MT_DELTA, 40 * SEC, d.name, &seen), 0);
	ASSERT_EQ(seen.visits, 0);

	/* totals given by the source: delta is the difference */
	mstore__lock(st);
	mseries__set(ser, 20, 45 * SEC);
	mstore__unlock(st);
	ASSERT_EQ(collect(st, MT_DELTA, 50 * SEC, d.name, &seen), 0);
	ASSERT_EQ(seen.p[0].value, 12);
	ASSERT_EQ(seen.p[0].start_ns, 40 * SEC);
	/* a total going down is a source restart */
	mstore__lock(st);
	mseries__set(ser, 4, 55 * SEC);
	mstore__unlock(st);
	ASSERT_EQ(collect(st, MT_DELTA, 60 * SEC, d.name, &seen), 0);
	ASSERT_EQ(seen.p[0].value, 4);
	ASSERT_EQ(collect(st, MT_CUMULATIVE, 60 * SEC, d.name, &seen), 0);
	ASSERT_EQ(seen.p[0].value, 4);
	ASSERT_EQ(seen.p[0].start_ns, 55 * SEC);
	mstore__free(st);
}

TEST(mstore_delta_without_keep_delta_reports_cumulative)
{
	struct mstore *st = mstore__new(NULL);
	struct mmetric_desc d = counter;
	struct mseries *ser;
	struct seen seen;
	int id;

	d.temporality = MT_DELTA;
	id = mstore__add_metric(st, &d);
	mstore__lock(st);
	ser = mstore__series(st, id, NULL, 0);
	mseries__add(ser, 5, 10 * SEC);
	mstore__unlock(st);
	ASSERT_EQ(collect(st, MT_DELTA, 20 * SEC, d.name, &seen), 0);
	ASSERT_EQ(seen.temporality, MT_CUMULATIVE);
	ASSERT_EQ(collect(st, MT_DELTA, 30 * SEC, d.name, &seen), 0);
	ASSERT_EQ(seen.p[0].value, 5);
	ASSERT_EQ(seen.p[0].start_ns, 10 * SEC);
	mstore__free(st);
}

TEST(mstore_delta_histogram)
{
	struct mstore_opts o = { .keep_delta = true };
	struct mstore *st = mstore__new(&o);
	struct mmetric_desc d = {
		.name = "lat",
		.unit = "s",
		.instrument = MI_HISTOGRAM,
		.temporality = MT_DELTA,
		.hist = MH_EXPONENTIAL,
	};
	struct mseries *ser;
	struct seen seen;
	int id = mstore__add_metric(st, &d);

	mstore__lock(st);
	ser = mstore__series(st, id, NULL, 0);
	mseries__observe(ser, 0.5, SEC);
	mseries__observe(ser, 1.5, SEC);
	mstore__unlock(st);
	ASSERT_EQ(collect(st, MT_DELTA, 2 * SEC, "lat", &seen), 0);
	ASSERT_EQ(seen.p[0].count, 2);
	ASSERT_NEAR(seen.p[0].sum, 2.0, 1e-12);
	mstore__lock(st);
	mseries__observe(ser, 4, 3 * SEC);
	mstore__unlock(st);
	ASSERT_EQ(collect(st, MT_DELTA, 4 * SEC, "lat", &seen), 0);
	ASSERT_EQ(seen.p[0].count, 1);
	ASSERT_NEAR(seen.p[0].sum, 4.0, 1e-12);
	ASSERT_EQ(collect(st, MT_CUMULATIVE, 4 * SEC, "lat", &seen), 0);
	ASSERT_EQ(seen.p[0].count, 3);
	ASSERT_NEAR(seen.p[0].sum, 6.0, 1e-12);
	mstore__free(st);
}

TEST(mstore_int_points_and_gauges)
{
	struct mstore *st = mstore__new(NULL);
	struct mmetric_desc d = {
		.name = "conns",
		.instrument = MI_GAUGE,
		.is_int = true,
	};
	struct mseries *ser;
	struct seen seen;
	int id = mstore__add_metric(st, &d);

	mstore__lock(st);
	ser = mstore__series(st, id, NULL, 0);
	mseries__set(ser, 41.6, SEC);
	mstore__unlock(st);
	ASSERT_EQ(collect(st, MT_DELTA, 2 * SEC, "conns", &seen), 0);
	ASSERT_EQ(seen.p[0].ivalue, 42);
	ASSERT_EQ(seen.p[0].value, 42);
	mstore__lock(st);
	mseries__set(ser, -3, 3 * SEC);
	mstore__unlock(st);
	ASSERT_EQ(collect(st, MT_CUMULATIVE, 4 * SEC, "conns", &seen), 0);
	ASSERT_EQ(seen.p[0].ivalue, -3);
	mstore__free(st);
}

static int stop_visit(void *ctx, const struct mmetric_desc *desc,
		      const struct mpoint_view *pts, size_t n)
{
	(*(int *)ctx)++;
	return -ECANCELED;
}

TEST(mstore_collect_stops_on_error)
{
	struct mstore *st = mstore__new(NULL);
	struct mmetric_desc d = counter;
	int i, visits = 0;

	for (i = 0; i < 3; i++) {
		char name[16];
		struct mseries *ser;
		int id;

		snprintf(name, sizeof(name), "m%d", i);
		d.name = name;
		id = mstore__add_metric(st, &d);
		mstore__lock(st);
		ser = mstore__series(st, id, NULL, 0);
		mseries__add(ser, 1, SEC);
		mstore__unlock(st);
	}
	ASSERT_EQ(mstore__collect(st, MT_CUMULATIVE, SEC, stop_visit, &visits),
		  -ECANCELED);
	ASSERT_EQ(visits, 1);
	mstore__free(st);
}

struct producer {
	struct mstore *st;
	int id;
	int n;
	int k;
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	char v[16];
	struct mlabel l = { "worker", v };
	int i;

	snprintf(v, sizeof(v), "w%d", p->k);
	for (i = 0; i < p->n; i++) {
		mstore__lock(p->st);
		mseries__add(mstore__series(p->st, p->id, &l, 1), 1,
			     (uint64_t)i + 1);
		mstore__unlock(p->st);
	}
	return NULL;
}

static int sum_points(void *ctx, const struct mmetric_desc *desc,
		      const struct mpoint_view *pts, size_t n)
{
	double *total = ctx;
	size_t i;

	for (i = 0; i < n; i++)
		*total += pts[i].value;
	return 0;
}

TEST(mstore_concurrent_producers_and_collectors)
{
	struct mstore_opts o = { .keep_delta = true };
	struct mstore *st = mstore__new(&o);
	struct mmetric_desc d = counter;
	struct producer p[4];
	pthread_t t[4];
	double delta_total = 0, cum = 0;
	int i, id;

	d.temporality = MT_DELTA;
	id = mstore__add_metric(st, &d);
	for (i = 0; i < 4; i++) {
		p[i] = (struct producer){ st, id, 20000, i };
		ASSERT_EQ(pthread_create(&t[i], NULL, produce, &p[i]), 0);
	}
	/* delta collections racing the producers lose and double nothing */
	for (i = 0; i < 200; i++)
		ASSERT_EQ(mstore__collect(st, MT_DELTA, SEC + i, sum_points,
					  &delta_total),
			  0);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	ASSERT_EQ(mstore__collect(st, MT_DELTA, 2 * SEC, sum_points,
				  &delta_total),
		  0);
	ASSERT_EQ(mstore__collect(st, MT_CUMULATIVE, 2 * SEC, sum_points, &cum),
		  0);
	ASSERT_EQ(delta_total, 80000);
	ASSERT_EQ(cum, 80000);
	mstore__free(st);
}

TEST(mstore_expiry_keeps_unreported_delta)
{
	struct mstore_opts o = { .keep_delta = true,
				 .idle_expiry_ns = 10 * SEC };
	struct mstore *st = mstore__new(&o);
	struct mmetric_desc d = counter;
	struct seen seen;
	int id;

	d.temporality = MT_DELTA;
	id = mstore__add_metric(st, &d);
	mstore__lock(st);
	mseries__add(mstore__series(st, id, NULL, 0), 4, SEC);
	mstore__unlock(st);
	/* idle for 29 s but the delta reader has not seen the 4 yet */
	ASSERT_EQ(collect(st, MT_CUMULATIVE, 30 * SEC, d.name, &seen), 0);
	ASSERT_EQ(seen.n, 1);
	ASSERT_EQ(collect(st, MT_DELTA, 31 * SEC, d.name, &seen), 0);
	ASSERT_EQ(seen.n, 1);
	ASSERT_EQ(seen.p[0].value, 4);
	/* reported: now it may go */
	ASSERT_EQ(collect(st, MT_CUMULATIVE, 32 * SEC, d.name, &seen), 0);
	ASSERT_EQ(seen.visits, 0);
	mstore__free(st);
}

/* What a subject filter sees: bound series carry their subject, a series
 * bound to two objects and the overflow series carry none (full readers
 * only), unbound ones none; mstore__subjects lists each subject once. */
static bool keep_ns_a(void *ctx, const char *subject)
{
	(void)ctx;
	return subject && strstr(subject, "\x1f"
					  "a\x1f");
}

TEST(mstore_subject_binding)
{
	struct mstore_opts o = { .max_series_per_metric = 4 };
	struct mmetric_desc d = { .name = "g", .instrument = MI_GAUGE };
	struct mstore *s = mstore__new(&o);
	struct mlabel l1 = { "k", "1" }, l2 = { "k", "2" }, l3 = { "k", "3" };
	struct mlabel l4 = { "k", "4" }, l5 = { "k", "5" };
	char sa[128], sb[128], *buf = NULL, **subs = NULL;
	struct mseries *x, *y, *z, *u, *ov;
	size_t len = 0, kept = 0;
	long n;
	FILE *f;
	int id;

	ASSERT_TRUE(s);
	id = mstore__add_metric(s, &d);
	ASSERT_TRUE(id >= 0);
	ASSERT_TRUE(
		msubject__format(sa, sizeof(sa), "g.io", "routes", "a", "r1"));
	ASSERT_TRUE(
		msubject__format(sb, sizeof(sb), "g.io", "routes", "b", "r1"));
	mstore__lock(s);
	x = mstore__series(s, id, &l1, 1);
	y = mstore__series(s, id, &l2, 1);
	z = mstore__series(s, id, &l3, 1);
	ov = mstore__series(s, id, &l5, 1); /* 4th label set: overflow */
	u = mstore__series(s, id, &l4, 1);
	ASSERT_TRUE(ov == u);
	ASSERT_EQ(mstore__bind(s, x, sa), 0);
	ASSERT_EQ(mstore__bind(s, x, sa), 0);
	ASSERT_EQ(mstore__bind(s, y, sa), 0);
	ASSERT_EQ(mstore__bind(s, y, sb), 0); /* mixed from now on */
	ASSERT_EQ(mstore__bind(s, y, sa), 0);
	ASSERT_EQ(mstore__bind(s, ov, sa), 0);
	mseries__set(x, 1, 1);
	mseries__set(y, 2, 1);
	mseries__set(z, 3, 1);
	mseries__set(ov, 4, 1);
	mstore__unlock(s);
	n = mstore__subjects(s, &subs);
	ASSERT_EQ(n, 1);
	ASSERT_STREQ(subs[0], sa);
	free(subs[0]);
	free(subs);
	f = open_memstream(&buf, &len);
	ASSERT_EQ(prom_text__write_filtered(f, s, PROM_FMT_TEXT, 2, NULL, 0,
					    keep_ns_a, NULL, &kept),
		  0);
	fclose(f);
	ASSERT_EQ(kept, 1);
	ASSERT_TRUE(strstr(buf, "g{k=\"1\"} 1\n"), "%s", buf);
	ASSERT_TRUE(!strstr(buf, "k=\"2\"") && !strstr(buf, "k=\"3\"") &&
			    !strstr(buf, "overflow"),
		    "%s", buf);
	free(buf);
	mstore__free(s);
}
