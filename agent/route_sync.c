// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/route_sync.h"
#include "policy/util/json_out.h"
#include "milometer.skel.h"
#include "policy/gateway/gateway_api.h"
#include "policy/gateway/route_compile.h"
#include "policy/source/manifest_source.h"
#include "policy/util/log.h"

#define GENS          4 /* tables kept for in-flight events */
#define GRACE_NS      (2ULL * 1000000000ULL)
#define MAX_LPORT_MAP 64
#define MAX_LKEYS     4096 /* mm_listeners entries */

struct gen_state {
	struct gw_model *model;
	struct route_table *table;
	uint64_t retire_at; /* 0: installed, keys live in the maps */
	int keys_live;
};

struct route_sync {
	struct milometer_bpf *skel;
	char *dir, *gateway;
	struct gen_state gens[GENS];
	uint32_t cur; /* generation installed */
	uint64_t fingerprint;
	uint64_t reloads;
	size_t rejected; /* objects the latest manifests left out */
	size_t dropped;  /* rules of their HTTPRoutes dropped alone */
	char last_error[512];
	struct manifest_source *src; /* the API, the dir's shared one, or NULL */
	bool src_is_dir;             /* src reads dir (its owner reloads it) */
	bool src_failed;             /* the dir's last reload failed (logged) */
	char build_error[512];       /* last_error before src_failed */
	uint64_t src_gen;
	/* gateway slots: [0] the default table (--gateway or all), then the
	 * Gateways of proxy pods in the order they were found; never reused */
	char *slots[MM_GW_SLOTS];
	size_t nslots;
	bool slots_changed; /* a slot was added: the next poll rebuilds */
	/* listener port -> socket port (--listener-port) */
	uint16_t lport_map[MAX_LPORT_MAP][2];
	size_t nlport_map;
	/* mm_listeners as installed */
	struct mm_listener_key lkeys[MAX_LKEYS];
	__u32 lvals[MAX_LKEYS];
	size_t nlkeys;
};

static struct gen_state *slot(struct route_sync *rs, uint32_t gen)
{
	return &rs->gens[gen % GENS];
}

struct route_sync *route_sync__new(struct milometer_bpf *skel, const char *dir,
				   const char *gateway)
{
	struct route_sync *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->skel = skel;
	rs->dir = dir ? strdup(dir) : NULL;
	rs->gateway = gateway ? strdup(gateway) : NULL;
	rs->slots[0] = rs->gateway;
	rs->nslots = 1;
	return rs;
}

static void delete_keys(struct route_sync *rs, struct gen_state *g)
{
	int vfd = bpf_map__fd(rs->skel->maps.mm_vhosts);
	int rfd = bpf_map__fd(rs->skel->maps.mm_routes);
	const struct route_table *t = g->table;

	if (!t || !g->keys_live)
		return;
	for (size_t i = 0; i < t->nvhost_keys; i++)
		bpf_map_delete_elem(vfd, &t->vhost_keys[i]);
	for (size_t i = 0; i < t->nroute_keys; i++)
		bpf_map_delete_elem(rfd, &t->route_keys[i]);
	g->keys_live = 0;
}

static void free_gen(struct gen_state *g)
{
	route_compile__free(g->table);
	gateway_api__free(g->model);
	memset(g, 0, sizeof(*g));
}

void route_sync__free(struct route_sync *rs)
{
	if (!rs)
		return;
	for (int i = 0; i < GENS; i++)
		free_gen(&rs->gens[i]);
	free(rs->dir);
	free(rs->gateway);
	for (size_t i = 1; i < rs->nslots; i++)
		free(rs->slots[i]);
	free(rs);
}

/* The files gateway_api__load_dir() reads: cheap to poll every second. */
static uint64_t fingerprint(const char *dir)
{
	return dir ? manifest_source__fingerprint(dir) : 0;
}

int route_sync__map_listener_port(struct route_sync *rs, uint16_t listener,
				  uint16_t sock)
{
	size_t i;

	for (i = 0; i < rs->nlport_map && rs->lport_map[i][0] != listener; i++)
		;
	if (i == MAX_LPORT_MAP)
		return -ENOSPC;
	rs->lport_map[i][0] = listener;
	rs->lport_map[i][1] = sock;
	if (i == rs->nlport_map)
		rs->nlport_map++;
	return 0;
}

/* --listener-port, else the Gateway's Service, else the port itself */
static uint16_t socket_port(const struct route_sync *rs,
			    const struct rc_slot *sl, size_t i)
{
	for (size_t k = 0; k < rs->nlport_map; k++)
		if (rs->lport_map[k][0] == sl->ports[i])
			return rs->lport_map[k][1];
	return sl->sports[i] ? sl->sports[i] : sl->ports[i];
}

static bool has_lkey(const struct mm_listener_key *keys, size_t n,
		     const struct mm_listener_key *k)
{
	for (size_t i = 0; i < n; i++)
		if (keys[i].gw == k->gw && keys[i].sport == k->sport)
			return true;
	return false;
}

/*
 * mm_listeners for table t: written before the flip (a connection accepted
 * meanwhile finds its port in either table: the keyed ports rarely change),
 * the previous table's other entries deleted after it (listeners_retire).
 */
static int listeners_write(struct route_sync *rs, const struct route_table *t,
			   struct mm_listener_key *keys, __u32 *vals, size_t *n)
{
	int fd = bpf_map__fd(rs->skel->maps.mm_listeners);

	*n = 0;
	for (size_t s = 0; s < t->nslots; s++) {
		const struct rc_slot *sl = &t->slots[s];

		for (size_t i = 0; i < sl->nports; i++) {
			struct mm_listener_key k = {
				.gw = (__u32)s,
				.sport = socket_port(rs, sl, i),
			};

			if (has_lkey(keys, *n, &k)) {
				pr_warn("listener ports of "
					"%s/%s map to one socket port %u: "
					"listener port %u is not told apart "
					"(fix --listener-port)\n",
					sl->gw_ns ? sl->gw_ns : "",
					sl->gw_name ? sl->gw_name : "", k.sport,
					sl->ports[i]);
				continue;
			}
			if (*n == MAX_LKEYS)
				return -E2BIG;
			keys[*n] = k;
			vals[*n] = sl->ports[i];
			if (bpf_map_update_elem(fd, &k, &vals[*n], BPF_ANY))
				return -errno;
			(*n)++;
		}
	}
	return 0;
}

static void listeners_retire(struct route_sync *rs,
			     const struct mm_listener_key *keys,
			     const __u32 *vals, size_t n)
{
	int fd = bpf_map__fd(rs->skel->maps.mm_listeners);

	for (size_t i = 0; i < rs->nlkeys; i++)
		if (!has_lkey(keys, n, &rs->lkeys[i]))
			bpf_map_delete_elem(fd, &rs->lkeys[i]);
	for (size_t i = 0; i < n; i++) {
		bool changed = true;

		for (size_t j = 0; j < rs->nlkeys; j++)
			if (rs->lkeys[j].gw == keys[i].gw &&
			    rs->lkeys[j].sport == keys[i].sport)
				changed = rs->lvals[j] != vals[i];
		if (changed)
			pr_info("gateway slot %u: socket "
				"port %u serves listener port %u\n",
				keys[i].gw, keys[i].sport, vals[i]);
	}
	memcpy(rs->lkeys, keys, n * sizeof(*keys));
	memcpy(rs->lvals, vals, n * sizeof(*vals));
	rs->nlkeys = n;
}

static int install(struct route_sync *rs, struct gw_model *m,
		   struct route_table *t)
{
	static struct mm_listener_key lkeys[MAX_LKEYS];
	static __u32 lvals[MAX_LKEYS];
	size_t nlkeys = 0;
	int vfd = bpf_map__fd(rs->skel->maps.mm_vhosts);
	int rfd = bpf_map__fd(rs->skel->maps.mm_routes);
	int cfd = bpf_map__fd(rs->skel->maps.mm_config);
	struct mm_config cfg = { .route_gen = t->gen };
	struct gen_state *g = slot(rs, t->gen), *old;
	__u32 zero = 0;
	int err = 0;

	/* the slot's previous occupant is GENS generations old: long retired */
	delete_keys(rs, g);
	free_gen(g);
	g->model = m;
	g->table = t;
	g->keys_live = 1;
	for (size_t i = 0; i < t->nvhost_keys && !err; i++)
		if (bpf_map_update_elem(vfd, &t->vhost_keys[i],
					&t->vhost_vals[i], BPF_ANY))
			err = -errno;
	for (size_t i = 0; i < t->nroute_keys && !err; i++)
		if (bpf_map_update_elem(rfd, &t->route_keys[i],
					&t->route_cands[i], BPF_ANY))
			err = -errno;
	if (!err && (err = listeners_write(rs, t, lkeys, lvals, &nlkeys)))
		for (size_t i = 0; i < nlkeys; i++)
			if (!has_lkey(rs->lkeys, rs->nlkeys, &lkeys[i]))
				bpf_map_delete_elem(
					bpf_map__fd(
						rs->skel->maps.mm_listeners),
					&lkeys[i]);
	if (err) {
		snprintf(
			rs->last_error, sizeof(rs->last_error),
			"writing the route table to BPF maps failed: %s (too many routes for the map sizes?)",
			strerror(-err));
		delete_keys(rs, g);
		free_gen(g);
		return err;
	}
	/* one 4-byte store: every request after it uses only the new keys */
	/* the other settings (feature flags) stay: only this thread writes */
	if (!bpf_map_lookup_elem(cfd, &zero, &cfg))
		cfg.route_gen = t->gen;
	cfg.flags = t->nslots > 1 ? cfg.flags | MM_CFG_GW_SLOTS
				  : cfg.flags & ~MM_CFG_GW_SLOTS;
	cfg.flags = route_compile__defers(t) ? cfg.flags | MM_CFG_DEFERS
					     : cfg.flags & ~MM_CFG_DEFERS;
	cfg.flags = nlkeys ? cfg.flags | MM_CFG_LISTENERS
			   : cfg.flags & ~MM_CFG_LISTENERS;
	if (bpf_map_update_elem(cfd, &zero, &cfg, BPF_ANY)) {
		err = -errno;
		delete_keys(rs, g);
		free_gen(g);
		return err;
	}
	listeners_retire(rs, lkeys, lvals, nlkeys);
	if (rs->reloads) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		old = slot(rs, rs->cur);
		old->retire_at =
			ts.tv_sec * 1000000000ULL + ts.tv_nsec + GRACE_NS;
	}
	rs->cur = t->gen;
	rs->reloads++;
	return 0;
}

static int build(struct route_sync *rs, char *err, size_t errlen)
{
	struct gw_model *m = gateway_api__new();
	struct route_table *t = NULL;
	uint32_t gen = rs->reloads ? rs->cur + 1 : 1;
	int ret;

	if (!m)
		return -ENOMEM;
	if (rs->src && !rs->src_is_dir) {
		const struct mobject *o = NULL;
		size_t skipped = 0;

		/* from the API one bad object must not hold back the rest */
		while ((o = manifest_source__next(rs->src, NULL, o))) {
			char why[512];

			if (gateway_api__add_doc(m, o->root, why, sizeof(why)) <
			    0) {
				log__msg(LOG_WARNING, "k8s",
					 "skipping %s %s/%s: %s\n", o->kind,
					 o->ns ? o->ns : "",
					 o->name ? o->name : "", why);
				skipped++;
			}
		}
		if (skipped)
			log__msg(
				LOG_WARNING, "k8s",
				"%zu Gateway/HTTPRoute objects skipped, the others are in the table\n",
				skipped);
		rs->rejected = skipped;
		rs->dropped =
			gateway_api__log_dropped(m, stderr, "milometer: k8s: ");
	} else if (rs->dir) {
		ret = rs->src ? gateway_api__load_source(m, rs->src, err,
							 errlen)
			      : gateway_api__load_dir(m, rs->dir, err, errlen);
		if (ret)
			goto fail;
		/*
		 * A hostile or broken object is left out with its reason
		 * (logged once per change of the manifests, as a reload only
		 * happens then); every other route still counts.
		 */
		rs->rejected = m->nrejected;
		for (size_t i = 0; i < m->nrejected; i++)
			pr_warn("manifest left out: %s\n", m->rejected[i]);
		rs->dropped =
			gateway_api__log_dropped(m, stderr, "milometer: ");
	}
	ret = route_compile__build_slots(m, (const char *const *)rs->slots,
					 rs->nslots, gen, &t, err, errlen);
	if (ret)
		goto fail;
	ret = install(rs, m, t);
	if (ret) {
		snprintf(err, errlen, "%s", rs->last_error);
		return ret;
	}
	rs->last_error[0] = 0;
	return 0;
fail:
	gateway_api__free(m);
	return ret;
}

void route_sync__set_source(struct route_sync *rs, struct manifest_source *src)
{
	rs->src = src;
	rs->src_is_dir = false;
}

void route_sync__share_dir_source(struct route_sync *rs,
				  struct manifest_source *src)
{
	rs->src = src;
	rs->src_is_dir = true;
}

/*
 * The shared source's reload failed (the directory went away...): the
 * table stays, rejected as a rebuild from the directory would have been.
 */
static int dir_source_failed(struct route_sync *rs)
{
	const char *why = manifest_source__failure(rs->src);

	if (!why) {
		/* back as it was: the table's own state, error or none, again */
		if (rs->src_failed)
			snprintf(rs->last_error, sizeof(rs->last_error), "%s",
				 rs->build_error);
		rs->src_failed = false;
		return 0;
	}
	if (!rs->src_failed) {
		pr_err("manifests rejected, keeping the previous route table: %s\n",
		       why);
		snprintf(rs->build_error, sizeof(rs->build_error), "%s",
			 rs->last_error);
	}
	snprintf(rs->last_error, sizeof(rs->last_error), "%s", why);
	rs->src_failed = true;
	return -EIO;
}

int route_sync__load(struct route_sync *rs, char *err, size_t errlen)
{
	if (rs->src)
		rs->src_gen = manifest_source__generation(rs->src);
	else
		rs->fingerprint = fingerprint(rs->dir);
	return build(rs, err, errlen);
}

int route_sync__poll(struct route_sync *rs, uint64_t now_ns)
{
	uint64_t fp;
	int ret = 0;

	for (int i = 0; i < GENS; i++) {
		struct gen_state *g = &rs->gens[i];

		if (g->retire_at && now_ns >= g->retire_at) {
			delete_keys(rs, g);
			g->retire_at = 0;
		}
	}
	if (rs->src && rs->src_is_dir && (ret = dir_source_failed(rs)))
		return ret;
	if (rs->src) {
		if (manifest_source__generation(rs->src) == rs->src_gen &&
		    !rs->slots_changed)
			return 0;
		rs->src_gen = manifest_source__generation(rs->src);
	} else {
		fp = fingerprint(rs->dir);
		if (fp == rs->fingerprint && !rs->slots_changed)
			return 0;
		rs->fingerprint = fp;
	}
	rs->slots_changed = false;
	ret = build(rs, rs->last_error, sizeof(rs->last_error));
	if (ret) {
		pr_err("manifests rejected, keeping the previous route table: %s\n",
		       rs->last_error);
		return ret;
	}
	pr_info("route table generation %u installed (%zu routes)\n", rs->cur,
		route_sync__current(rs)->nroutes);
	return 1;
}

int route_sync__gateway_slot(struct route_sync *rs, const char *ns,
			     const char *name)
{
	char want[512];
	int n = snprintf(want, sizeof(want), "%s/%s", ns, name);

	if (n < 0 || (size_t)n >= sizeof(want))
		return -ENAMETOOLONG;
	if (rs->gateway && !strcmp(rs->gateway, want))
		return 0;
	for (size_t i = 1; i < rs->nslots; i++)
		if (!strcmp(rs->slots[i], want))
			return (int)i;
	if (rs->nslots == MM_GW_SLOTS)
		return -ENOSPC;
	if (!(rs->slots[rs->nslots] = strdup(want)))
		return -ENOMEM;
	rs->slots_changed = true;
	return (int)rs->nslots++;
}

const struct route_table *route_sync__table_fn(void *rs, uint32_t gen)
{
	return route_sync__table(rs, gen);
}

const struct route_table *route_sync__table(const struct route_sync *rs,
					    uint32_t gen)
{
	const struct gen_state *g = &rs->gens[gen % GENS];

	return g->table && g->table->gen == gen ? g->table : NULL;
}

const struct route_table *route_sync__current(const struct route_sync *rs)
{
	return route_sync__table(rs, rs->cur);
}

const char *route_sync__last_error(const struct route_sync *rs)
{
	return rs->last_error[0] ? rs->last_error : NULL;
}

uint64_t route_sync__reloads(const struct route_sync *rs)
{
	return rs->reloads;
}

size_t route_sync__rejected_objects(const struct route_sync *rs)
{
	return rs->rejected;
}

size_t route_sync__dropped_rules(const struct route_sync *rs)
{
	return rs->dropped;
}

void route_sync__dump(const struct route_sync *rs, FILE *out, int json)
{
	const struct route_table *t = route_sync__current(rs);

	if (!t)
		return;
	if (json) {
		fprintf(out, "{\"generation\":%u,\"routes\":[", t->gen);
		for (size_t i = 0; i < t->nroutes; i++) {
			const struct rc_route *r = &t->routes[i];
			char gw[512];

			snprintf(gw, sizeof(gw), "%s/%s",
				 r->gw_ns ? r->gw_ns : "",
				 r->gw_name ? r->gw_name : "");
			fprintf(out, "%s{\"id\":%zu,", i ? "," : "", i);
			json_out__key(out, "namespace");
			json_out__str(out, r->ns);
			fputc(',', out);
			json_out__key(out, "name");
			json_out__str(out, r->name);
			fputc(',', out);
			json_out__key(out, "gateway");
			json_out__str(out, gw);
			fprintf(out, ",\"rules\":%u}", r->nrules);
		}
		fprintf(out,
			"],\"vhosts\":%zu,\"vhost_keys\":%zu,\"route_keys\":%zu}\n",
			t->nvhosts, t->nvhost_keys, t->nroute_keys);
		return;
	}
	fprintf(out,
		"generation %u: %zu routes, %zu virtual hosts, %zu+%zu map keys\n",
		t->gen, t->nroutes, t->nvhosts, t->nvhost_keys, t->nroute_keys);
	for (size_t v = 0; v < t->nvhosts; v++) {
		const struct rc_vhost *vh = &t->vhosts[v];

		fprintf(out, "  vhost %zu %s\n", v,
			vh->host[0] ? vh->host : "*");
		for (size_t e = 0; e < vh->nentries; e++) {
			const struct rc_entry *en = &vh->entries[e];
			const struct rc_route *r = &t->routes[en->route_id];

			fprintf(out, "    %s/%s rule %u match %u\n", r->ns,
				r->name, en->rule_idx, en->match_idx);
		}
	}
}
