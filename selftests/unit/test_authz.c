// SPDX-License-Identifier: Apache-2.0
/*
 * agent/authz/authz.c against a small in-process API server (libmicrohttpd,
 * plain HTTP): which reviews one scrape sends, the cache (TTL, the bound
 * on entries), failing closed when the server errs, and the per-scrape
 * review budget. The wire shapes and real clients are checked by
 * selftests/k8s/test_metrics_authz.sh against the test API server.
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "agent/authz/authz.h"
#include "agent/k8s/config.h"
#include "policy/model/metric_store.h"
#include "exporter/prom_server.h"
#include "selftests/unit/test.h"

struct fake {
	struct MHD_Daemon *d;
	int port;
	int status; /* answer this instead when not 201 */
	int delay_ms;
	int tr, sar; /* reviews answered */
};

struct body {
	char *buf;
	size_t len;
};

/* TokenReview: "good" is user u. SAR: allowed in namespace a only. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *data,
			      size_t *size, void **req)
{
	struct fake *f = cls;
	struct body *b = *req;
	struct json_object *o, *spec, *st, *v, *ra;
	struct MHD_Response *r;
	const char *out;
	enum MHD_Result ret;

	(void)method;
	(void)version;
	if (!b) {
		*req = calloc(1, sizeof(*b));
		return MHD_YES;
	}
	if (*size) {
		b->buf = realloc(b->buf, b->len + *size + 1);
		memcpy(b->buf + b->len, data, *size);
		b->len += *size;
		b->buf[b->len] = 0;
		*size = 0;
		return MHD_YES;
	}
	if (f->delay_ms)
		usleep(f->delay_ms * 1000);
	o = json_tokener_parse(b->buf ? b->buf : "{}");
	st = json_object_new_object();
	json_object_object_get_ex(o, "spec", &spec);
	if (strstr(url, "tokenreviews")) {
		f->tr++;
		if (json_object_object_get_ex(spec, "token", &v) &&
		    !strcmp(json_object_get_string(v), "good")) {
			struct json_object *u = json_object_new_object();

			json_object_object_add(u, "username",
					       json_object_new_string("u"));
			json_object_object_add(st, "authenticated",
					       json_object_new_boolean(1));
			json_object_object_add(st, "user", u);
		}
	} else {
		bool allowed = false;

		f->sar++;
		if (json_object_object_get_ex(spec, "resourceAttributes",
					      &ra) &&
		    json_object_object_get_ex(ra, "namespace", &v))
			allowed = !strcmp(json_object_get_string(v), "a");
		json_object_object_add(st, "allowed",
				       json_object_new_boolean(allowed));
	}
	json_object_object_add(o, "status", st);
	out = json_object_to_json_string(o);
	r = MHD_create_response_from_buffer(strlen(out), (void *)out,
					    MHD_RESPMEM_MUST_COPY);
	ret = MHD_queue_response(c, f->status ? (unsigned)f->status : 201, r);
	MHD_destroy_response(r);
	json_object_put(o);
	free(b->buf);
	free(b);
	*req = NULL;
	return ret;
}

static bool fake_start(struct fake *f)
{
	const union MHD_DaemonInfo *i;

	f->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
				handle, f, MHD_OPTION_END);
	if (!f->d)
		return false;
	i = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
	f->port = i ? i->port : 0;
	return f->port > 0;
}

static struct k8s_config *config_for(int port)
{
	char path[512];
	struct k8s_config *c = NULL;
	char err[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/authz-kubeconfig", test__tmpdir());
	fp = fopen(path, "w");
	if (!fp)
		return NULL;
	fprintf(fp,
		"apiVersion: v1\nkind: Config\n"
		"clusters: [{name: t, cluster: {server: \"http://127.0.0.1:%d\"}}]\n"
		"users: [{name: t, user: {token: agent}}]\n"
		"contexts: [{name: t, context: {cluster: t, user: t}}]\n"
		"current-context: t\n",
		port);
	fclose(fp);
	if (k8s_config__load(path, &c, err, sizeof(err)))
		return NULL;
	return c;
}

static struct mstore *store_with(const char *const *objs, size_t n)
{
	struct mmetric_desc d = { .name = "c", .instrument = MI_COUNTER };
	struct mstore *s = mstore__new(NULL);
	int id = mstore__add_metric(s, &d);

	mstore__lock(s);
	for (size_t i = 0; i < n; i++) {
		struct mlabel l = { "o", objs[i] };
		struct mseries *ser = mstore__series(s, id, &l, 1);
		char subj[128], ns[32];

		snprintf(ns, sizeof(ns), "%.*s",
			 (int)(strchr(objs[i], '/') - objs[i]), objs[i]);
		msubject__format(subj, sizeof(subj), "g.io", "routes", ns,
				 strchr(objs[i], '/') + 1);
		mstore__bind(s, ser, subj);
		mseries__add(ser, 1, 1);
	}
	mstore__unlock(s);
	return s;
}

/* begin + end as the server does; returns the status, kept into *kept */
static int scrape(struct k8s_authz *a, struct mstore *s, const char *hdr,
		  const char *subj, bool *kept, char *msg)
{
	const struct prom_auth *h = k8s_authz__prom_auth(a);
	void *access = NULL;
	int st = h->begin(h->ctx, s, hdr, &access, msg, 256);

	if (kept)
		*kept = st == 200 && (!access || h->keep(access, subj));
	if (access)
		h->end(access);
	return st;
}

TEST(authz_reviews_cache_bound_and_failure)
{
	static const char *const objs[] = { "a/r1", "a/r2", "b/r1", "b/r2" };
	struct fake f = {};
	struct k8s_config *cfg;
	struct k8s_authz_opts o = { .ttl_s = 1 };
	struct k8s_authz *a;
	struct k8s_authz_stats st;
	struct mstore *s = store_with(objs, 4);
	char msg[256], sa[64], sb[64];
	bool kept;

	if (!ASSERT_TRUE(fake_start(&f)))
		return;
	cfg = config_for(f.port);
	ASSERT_OK_PTR(cfg);
	o.cfg = cfg;
	msubject__format(sa, sizeof(sa), "g.io", "routes", "a", "r1");
	msubject__format(sb, sizeof(sb), "g.io", "routes", "b", "r1");
	a = k8s_authz__new(&o, msg, sizeof(msg));
	ASSERT_OK_PTR(a);

	ASSERT_EQ(scrape(a, s, NULL, sa, &kept, msg), 401);
	ASSERT_EQ(scrape(a, s, "Bearer bad", sa, &kept, msg), 401);
	ASSERT_EQ(f.tr, 1);
	/* TokenReview, /metrics, namespace a (allowed), namespace b then b/r1, b/r2 */
	f.tr = f.sar = 0;
	ASSERT_EQ(scrape(a, s, "Bearer good", sa, &kept, msg), 200);
	ASSERT_TRUE(kept);
	ASSERT_EQ(scrape(a, s, "Bearer good", sb, &kept, msg), 200);
	ASSERT_TRUE(!kept);
	ASSERT_EQ(f.tr, 1);
	ASSERT_EQ(f.sar, 5);
	/* the server fails: fresh decisions still serve, none past the TTL */
	f.status = 500;
	ASSERT_EQ(scrape(a, s, "Bearer good", sa, &kept, msg), 200);
	usleep(1100 * 1000);
	ASSERT_EQ(scrape(a, s, "Bearer good", sa, &kept, msg), 503);
	ASSERT_TRUE(strstr(msg, "500") != NULL, "%s", msg);
	k8s_authz__stats(a, &st);
	ASSERT_TRUE(st.errors >= 1 && st.cache_hits >= 5);
	k8s_authz__free(a);

	/* the bound: three entries, the oldest go first; the answer is the same */
	f.status = 0;
	o.max_entries = 3;
	o.ttl_s = 30;
	a = k8s_authz__new(&o, msg, sizeof(msg));
	ASSERT_EQ(scrape(a, s, "Bearer good", sa, &kept, msg), 200);
	ASSERT_TRUE(kept);
	k8s_authz__stats(a, &st);
	ASSERT_EQ(st.entries, 3);
	ASSERT_EQ(st.evictions, 3); /* 6 decisions made, 3 kept */
	k8s_authz__free(a);

	/* the budget: 30 ms per review, 50 ms per scrape; each scrape goes on
	 * from the decisions the previous ones cached */
	f.delay_ms = 30;
	o.max_entries = 0;
	o.budget_ms = 50;
	a = k8s_authz__new(&o, msg, sizeof(msg));
	{
		int tries = 0, code;

		while ((code = scrape(a, s, "Bearer good", sb, &kept, msg)) ==
			       503 &&
		       tries < 10) {
			ASSERT_TRUE(strstr(msg, "scrape again") != NULL, "%s",
				    msg);
			tries++;
		}
		ASSERT_EQ(code, 200);
		ASSERT_TRUE(tries >= 1, "no scrape ran out of budget");
		ASSERT_TRUE(!kept);
	}
	k8s_authz__free(a);
	MHD_stop_daemon(f.d);
	k8s_config__free(cfg);
	mstore__free(s);
}
