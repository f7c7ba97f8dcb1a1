// SPDX-License-Identifier: Apache-2.0
/*
 * One OTLP export interval with 10k series in the store: otlp_encode__store
 * (delta view collection + protobuf encoding, the agent's export path) over
 * 10k counter series plus explicit and exponential histogram series with
 * the labels a gateway produces. Best of several intervals, each after a
 * fresh round of updates; bytes plain and gzipped.
 *
 * Prints human lines and "figure NAME VALUE" lines for run.sh's report.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "policy/model/metric_store.h"
#include "exporter/otlp_encode.h"
#include "exporter/otlp_gzip.h"

#define SEC 1000000000ULL

enum { NCOUNTER = 10000, NHIST = 1000, ROUNDS = 5 };

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * SEC + ts.tv_nsec;
}

/* Series i of a gateway: route x method x status, as aggregate.c labels. */
static struct mseries *series(struct mstore *st, int id, int i)
{
	static const char *methods[] = { "GET", "POST", "PUT", "DELETE",
					 "PATCH" };
	static const char *codes[] = { "200", "201", "204", "304",
				       "404", "500", "503", "429" };
	char route[32], ns[16], cluster[64], cls[4];
	const char *code = codes[i / 5 % 8];
	struct mlabel l[] = {
		{ "k8s.httproute.name", route },
		{ "k8s.namespace.name", ns },
		{ "k8s.gateway.name", "gw" },
		{ "envoy.cluster_name", cluster },
		{ "http.request.method", methods[i % 5] },
		{ "http.response.status_code", code },
		{ "http.response.status_code_class", cls },
	};

	snprintf(route, sizeof(route), "svc-%d", i / 40);
	snprintf(ns, sizeof(ns), "team-%d", i / 40 % 10);
	snprintf(cluster, sizeof(cluster), "httproute/team-%d/svc-%d/rule/0",
		 i / 40 % 10, i / 40);
	snprintf(cls, sizeof(cls), "%cxx", code[0]);
	return mstore__series(st, id, l, 7);
}

int main(void)
{
	struct mmetric_desc cd = {
		.name = "envoy.http.downstream_rq_total",
		.unit = "1",
		.instrument = MI_COUNTER,
		.temporality = MT_CUMULATIVE,
		.is_int = true,
	};
	struct mmetric_desc hd = {
		.name = "envoy.http.downstream_rq_time",
		.unit = "ms",
		.instrument = MI_HISTOGRAM,
		.hist = MH_EXPLICIT,
	};
	struct mmetric_desc xd = {
		.name = "gateway.request.duration",
		.unit = "s",
		.instrument = MI_HISTOGRAM,
		.hist = MH_EXPONENTIAL,
		.temporality = MT_DELTA,
	};
	struct mstore_opts so = { .max_series_per_metric = 20000,
				  .keep_delta = true };
	struct mstore *st = mstore__new(&so);
	struct otlp_encoder *e = otlp_encoder__new(NULL);
	uint64_t t, best = UINT64_MAX, now = 1700000000ULL * SEC;
	size_t len = 0, zlen = 0;
	void *buf = NULL, *z = NULL;
	int cid, hid, xid, n = 0, ret = 1;

	if (!st || !e)
		goto cleanup;
	cid = mstore__add_metric(st, &cd);
	hid = mstore__add_metric(st, &hd);
	xid = mstore__add_metric(st, &xd);
	if (cid < 0 || hid < 0 || xid < 0)
		goto cleanup;
	for (int r = 0; r < ROUNDS; r++) {
		mstore__lock(st);
		for (int i = 0; i < NCOUNTER; i++)
			mseries__add(series(st, cid, i), 1 + i % 7, now);
		for (int i = 0; i < NHIST; i++) {
			struct mseries *h = series(st, hid, i);
			struct mseries *x = series(st, xid, i);

			/* 20 observations, 1 ms .. 2 s */
			for (int k = 0; k < 20; k++) {
				double ms = exp2((i + k * 7) % 11);

				mseries__observe(h, ms, now);
				mseries__observe(x, ms / 1000, now);
			}
		}
		mstore__unlock(st);
		now += 60 * SEC;
		free(buf);
		t = mono_ns();
		n = otlp_encode__store(e, st, now, &buf, &len);
		t = mono_ns() - t;
		if (n < 0) {
			fprintf(stderr, "bench_export: encode failed: %d\n", n);
			goto cleanup;
		}
		if (t < best)
			best = t;
	}
	if (otlp_gzip__compress(buf, len, &z, &zlen))
		goto cleanup;
	printf("otlp encode (collect + protobuf) of the store: %d counter + "
	       "%d explicit + %d exponential histogram series = %d points: "
	       "%.2f ms, %zu bytes (%.0f B/point), gzip %zu bytes\n",
	       NCOUNTER, NHIST, NHIST, n, best / 1e6, len, (double)len / n,
	       zlen);
	printf("figure otlp_points %d\n", n);
	printf("figure otlp_encode_ms %.3f\n", best / 1e6);
	printf("figure otlp_bytes %zu\n", len);
	printf("figure otlp_gzip_bytes %zu\n", zlen);
	ret = 0;
cleanup:
	free(buf);
	free(z);
	otlp_encoder__free(e);
	mstore__free(st);
	return ret;
}
