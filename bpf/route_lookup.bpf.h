/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Attribute a parsed request head to (HTTPRoute, rule) with the compiled
 * route table (format in bpf/milometer.h, compiled by policy/route_compile.c,
 * mirrored step for step by policy/route_match.c for `milometer explain`).
 */
#ifndef MM_ROUTE_LOOKUP_BPF_H
#define MM_ROUTE_LOOKUP_BPF_H

#include "bpf/conn.bpf.h"

enum { RL_NONE = 0, RL_DECIDED, RL_DEFER };

struct mm_route_res {
	__u32 gen;
	__u32 route_id;
	__u16 rule_idx;
};

static __always_inline int scan_cands(const struct mm_route_cands *rc,
				      __u8 method, struct mm_route_res *res)
{
	__u32 n = rc->n;

#pragma unroll
	for (int i = 0; i < MM_ROUTE_CANDS; i++) {
		const struct mm_route_cand *cand = &rc->c[i];

		if (i >= n)
			break;
		if (cand->method != MM_M_ANY && cand->method != method)
			continue;
		if (cand->flags & MM_CAND_NEEDS_USER)
			return RL_DEFER;
		res->route_id = cand->route_id;
		res->rule_idx = cand->rule_idx;
		return RL_DECIDED;
	}
	return RL_NONE;
}

struct mm_suffix_ctx {
	struct mm_conn *c;
	__u32 from;
	__u64 h;
};

static long suffix_byte(__u32 i, void *ctx)
{
	struct mm_suffix_ctx *x = ctx;
	__u32 pos = x->from + i;

	if (pos >= x->c->host_len)
		return 1;
	x->h = fnv_step(x->h, *IDX(x->c->host, pos, MM_HOST_MAX));
	return 0;
}

struct mm_wild_ctx {
	struct mm_conn *c;
	__u32 gen;
	struct mm_vhost_val *vh;
};

static long wildcard_try(__u32 i, void *ctx)
{
	struct mm_wild_ctx *x = ctx;
	struct mm_suffix_ctx sx = { .c = x->c, .h = MM_FNV_OFFSET };
	struct mm_vhost_key key = { .gen = x->gen, .kind = MM_VH_WILDCARD };

	if (i >= x->c->ndots || i >= MM_DOTS_MAX)
		return 1;
	sx.from = *IDX(x->c->dots, i, MM_DOTS_MAX) + 1;
	/* "*.example.com" never matches the apex: a label must precede */
	if (sx.from <= 1)
		return 0;
	bpf_loop(MM_HOST_MAX, suffix_byte, &sx, 0);
	key.hash = sx.h;
	x->vh = bpf_map_lookup_elem(&mm_vhosts, &key);
	return x->vh ? 1 : 0;
}

/* NULL with *defer set when only user space can pick the vhost. */
static __always_inline struct mm_vhost_val *vhost_lookup(struct mm_conn *c,
							 __u32 gen, bool *defer)
{
	struct mm_vhost_key key = { .gen = gen };
	struct mm_vhost_val *vh;
	__u64 h = c->host_hash;
	__u8 len = c->host_len;

	if (len) {
		/* "example.com." names the same host as "example.com" */
		if (*IDX(c->host, len - 1, MM_HOST_MAX) == '.') {
			struct mm_suffix_ctx sx = { .c = c, .h = MM_FNV_OFFSET };

			c->host_len = len - 1;
			bpf_loop(MM_HOST_MAX, suffix_byte, &sx, 0);
			h = sx.h;
		}
		key.kind = MM_VH_EXACT;
		key.hash = h;
		vh = bpf_map_lookup_elem(&mm_vhosts, &key);
		if (vh)
			return vh;
		if (c->ndots) {
			struct mm_wild_ctx wx = { .c = c, .gen = gen };

			bpf_loop(MM_DOTS_MAX, wildcard_try, &wx, 0);
			if (wx.vh)
				return wx.vh;
		}
		/* shorter suffixes past dots[] were not tried: user space */
		if (c->dots_over) {
			*defer = true;
			return NULL;
		}
	}
	key.kind = MM_VH_CATCHALL;
	key.hash = 0;
	return bpf_map_lookup_elem(&mm_vhosts, &key);
}

struct mm_prefix_ctx {
	struct mm_conn *c;
	struct mm_route_res *res;
	__u32 vhost;
	__u8 method;
	int verdict;
};

/* i = 0: the whole path; i = k: the k-th '/' boundary from the end */
static long prefix_try(__u32 i, void *ctx)
{
	struct mm_prefix_ctx *x = ctx;
	struct mm_route_key key = {
		.gen = x->res->gen, .vhost_id = x->vhost, .kind = MM_PATH_PREFIX,
	};
	struct mm_route_cands *rc;
	__u32 nb = x->c->nbounds;

	if (nb > MM_PATH_PREFIXES)
		nb = MM_PATH_PREFIXES;
	if (i > nb)
		return 1;
	key.hash = i ? *IDX(x->c->bounds, nb - i, MM_PATH_PREFIXES) :
		       x->c->path_hash;
	rc = bpf_map_lookup_elem(&mm_routes, &key);
	if (!rc)
		return 0;
	x->verdict = scan_cands(rc, x->method, x->res);
	return x->verdict != RL_NONE;
}

/*
 * Returns the route id (or MM_ROUTE_*) and fills res. Order: vhost by Host
 * (exact, longest wildcard, catch-all), then Exact path, then (regex paths
 * present: defer), then PathPrefix longest first.
 */
static __always_inline __u32 route_lookup(struct mm_conn *c, __u8 method,
					  struct mm_route_res *res)
{
	__u32 zero = 0;
	struct mm_config *cfg = bpf_map_lookup_elem(&mm_config, &zero);
	struct mm_route_key key = { .kind = MM_PATH_EXACT };
	struct mm_prefix_ctx px = { .c = c, .res = res, .method = method };
	struct mm_vhost_val *vh;
	struct mm_route_cands *rc;
	bool defer = false;
	int v;

	if (!cfg)
		return MM_ROUTE_UNKNOWN;
	res->gen = cfg->route_gen;
	res->rule_idx = 0;
	/* absolute-form targets, hosts past MM_HOST_MAX: user space decides */
	if (!c->target_ok || c->host_state == 3)
		return MM_ROUTE_DEFER;
	vh = vhost_lookup(c, res->gen, &defer);
	if (!vh)
		return defer ? MM_ROUTE_DEFER : MM_ROUTE_UNMATCHED;
	if ((vh->flags & MM_VHOST_DEEP) && c->nbounds > MM_PATH_PREFIXES)
		return MM_ROUTE_DEFER;
	key.gen = res->gen;
	key.vhost_id = vh->vhost_id;
	key.hash = c->path_hash;
	rc = bpf_map_lookup_elem(&mm_routes, &key);
	if (rc) {
		v = scan_cands(rc, method, res);
		if (v == RL_DECIDED)
			return res->route_id;
		if (v == RL_DEFER)
			return MM_ROUTE_DEFER;
	}
	if (vh->flags & MM_VHOST_HAS_REGEX)
		return MM_ROUTE_DEFER;
	px.vhost = vh->vhost_id;
	bpf_loop(MM_PATH_PREFIXES + 1, prefix_try, &px, 0);
	if (px.verdict == RL_DECIDED)
		return res->route_id;
	if (px.verdict == RL_DEFER)
		return MM_ROUTE_DEFER;
	return MM_ROUTE_UNMATCHED;
}

#endif /* MM_ROUTE_LOOKUP_BPF_H */
