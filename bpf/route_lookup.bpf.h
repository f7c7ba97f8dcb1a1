/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Attribute a parsed request head to (HTTPRoute, rule) with the compiled
 * route table (format in bpf/milometer.h, compiled by policy/gateway/route_compile.c,
 * mirrored step for step by policy/gateway/route_match.c for `milometer explain`).
 */
#ifndef MM_ROUTE_LOOKUP_BPF_H
#define MM_ROUTE_LOOKUP_BPF_H

#include "bpf/compat.bpf.h"
#include "bpf/conn.bpf.h"
#include "bpf/maps.bpf.h"
#include "bpf/http_parse.bpf.h"

enum { RL_NONE = 0, RL_DECIDED, RL_DEFER };

/* Decision in s->rl_route_id / s->rl_rule_idx when RL_DECIDED. */
static __always_inline int scan_cands(const struct mm_route_cands *rc,
				      __u8 method, struct mm_scratch *s)
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
		s->rl_route_id = cand->route_id;
		s->rl_rule_idx = cand->rule_idx;
		return RL_DECIDED;
	}
	return RL_NONE;
}

/* s->sfx_hash = FNV of host[s->sfx_from, host_len) */
static long suffix_byte(__u32 i, void *ctx)
{
	struct mm_lctx *x = ctx;
	struct mm_scratch *s = x->s;
	__u32 pos = s->sfx_from + i;

	if (pos >= x->s->ra.host_len)
		return 1;
	s->sfx_hash = fnv1a64_step(s->sfx_hash,
				   *IDX(x->s->ra.host, pos, MM_HOST_MAX));
	return 0;
}

static __always_inline __u64 suffix_hash(struct mm_lctx *x, __u32 from)
{
	x->s->sfx_from = from;
	x->s->sfx_hash = MM_FNV_OFFSET;
	MM_LOOP(MM_HOST_MAX, MM_HOST_MAX, suffix_byte, x);
	return x->s->sfx_hash;
}

static long wildcard_try(__u32 i, void *ctx)
{
	struct mm_lctx *x = ctx;
	struct mm_scratch *s = x->s;
	struct mm_vhost_key key = {
		.gen = s->rl_gen,
		.kind = MM_VH_WILDCARD,
		.gw = x->c->gw,
		.port = s->rl_lport,
	};
	struct mm_vhost_val *vh;
	__u32 from;

	if (i >= x->s->ra.ndots || i >= MM_DOTS_MAX)
		return 1;
	from = *IDX(x->s->ra.dots, i, MM_DOTS_MAX) + 1;
	/* "*.example.com" never matches the apex: a label must precede */
	if (from <= 1)
		return 0;
	key.hash = suffix_hash(x, from);
	vh = bpf_map_lookup_elem(&mm_vhosts, &key);
	if (!vh)
		return 0;
	s->vh_found = 1;
	s->vh_id = vh->vhost_id;
	s->vh_flags = vh->flags;
	return 1;
}

/*
 * Fills s->vh_id/vh_flags and returns true when a vhost fits; false with
 * *defer set when only user space can pick it.
 */
static __always_inline bool vhost_lookup(struct mm_lctx *x, bool *defer)
{
	struct mm_conn *c = x->c;
	struct mm_scratch *s = x->s;
	struct mm_route_acc *a = &s->ra;
	struct mm_vhost_key key = {
		.gen = s->rl_gen,
		.gw = c->gw,
		.port = s->rl_lport,
	};
	struct mm_vhost_val *vh;
	__u64 h = a->host_hash;
	__u8 len = a->host_len;

	if (len) {
		/* "example.com." names the same host as "example.com" */
		if (*IDX(a->host, len - 1, MM_HOST_MAX) == '.') {
			a->host_len = len - 1;
			h = suffix_hash(x, 0);
		}
		key.kind = MM_VH_EXACT;
		key.hash = h;
		vh = bpf_map_lookup_elem(&mm_vhosts, &key);
		if (vh)
			goto found;
		if (a->ndots) {
			s->vh_found = 0;
			MM_LOOP(MM_DOTS_MAX, MM_DOTS_MAX, wildcard_try, x);
			if (s->vh_found)
				return true;
		}
		/* shorter suffixes past dots[] were not tried: user space */
		if (a->dots_over) {
			*defer = true;
			return false;
		}
	}
	key.kind = MM_VH_CATCHALL;
	key.hash = 0;
	vh = bpf_map_lookup_elem(&mm_vhosts, &key);
	if (!vh)
		return false;
found:
	s->vh_id = vh->vhost_id;
	s->vh_flags = vh->flags;
	return true;
}

/* i = 0: the whole path; i = k: the k-th '/' boundary from the end */
static long prefix_try(__u32 i, void *ctx)
{
	struct mm_lctx *x = ctx;
	struct mm_scratch *s = x->s;
	struct mm_route_key key = {
		.gen = s->rl_gen,
		.vhost_id = s->rl_vhost,
		.kind = MM_PATH_PREFIX,
	};
	struct mm_route_cands *rc;
	__u32 nb = x->s->ra.nbounds;

	if (nb > MM_PATH_PREFIXES)
		nb = MM_PATH_PREFIXES;
	if (i > nb)
		return 1;
	key.hash = i ? *IDX(x->s->ra.bounds, nb - i, MM_PATH_PREFIXES)
		     : x->s->ra.path_hash;
	rc = bpf_map_lookup_elem(&mm_routes, &key);
	if (!rc)
		return 0;
	s->rl_verdict = scan_cands(rc, s->rl_method, s);
	return s->rl_verdict != RL_NONE;
}

/*
 * Order: vhost by Host (exact, longest wildcard, catch-all), then Exact
 * path, then (regex paths present: defer), then PathPrefix longest first.
 */
static __always_inline __u32 route_decide(struct mm_lctx *x, __u8 method)
{
	struct mm_route_key key = { .kind = MM_PATH_EXACT };
	struct mm_scratch *s = x->s;
	struct mm_route_acc *a = &s->ra;
	struct mm_route_cands *rc;
	bool defer = false;
	int v;

	s->rl_rule_idx = 0;
	if (!vhost_lookup(x, &defer))
		return defer ? MM_ROUTE_DEFER : MM_ROUTE_UNMATCHED;
	if ((s->vh_flags & MM_VHOST_DEEP) && a->nbounds > MM_PATH_PREFIXES)
		return MM_ROUTE_DEFER;
	key.gen = s->rl_gen;
	key.vhost_id = s->vh_id;
	key.hash = a->path_hash;
	rc = bpf_map_lookup_elem(&mm_routes, &key);
	if (rc) {
		v = scan_cands(rc, method, s);
		if (v == RL_DECIDED)
			return s->rl_route_id;
		if (v == RL_DEFER)
			return MM_ROUTE_DEFER;
	}
	if (s->vh_flags & MM_VHOST_HAS_REGEX)
		return MM_ROUTE_DEFER;
	s->rl_vhost = s->vh_id;
	s->rl_method = method;
	s->rl_verdict = RL_NONE;
	MM_LOOP(MM_PATH_PREFIXES + 1, MM_PATH_PREFIXES + 1, prefix_try, x);
	if (s->rl_verdict == RL_DECIDED)
		return s->rl_route_id;
	if (s->rl_verdict == RL_DEFER)
		return MM_ROUTE_DEFER;
	return MM_ROUTE_UNMATCHED;
}

#ifdef MM_BOUNDED_LOOPS
/* its loops nest (wildcard suffixes x host bytes): verified once here */
__noinline __u32 mm_route_decide_g(__u32 method)
{
	struct mm_lctx x;

	if (!mm_lctx_of_scratch(&x))
		return MM_ROUTE_UNKNOWN;
	return route_decide(&x, method);
}
#define ROUTE_DECIDE(x, method) mm_route_decide_g(method)
#else
#define ROUTE_DECIDE(x, method) route_decide((x), (method))
#endif

/*
 * Returns the route id (or MM_ROUTE_*); s->rl_gen and s->rl_rule_idx hold
 * the generation and rule. (generation, slot, listener port, method, host,
 * path) decide the answer, so it is remembered by them. lport: the
 * listener port whose vhosts apply (mm_vhost_key), left in s->rl_lport.
 */
static __always_inline __u32 route_lookup(struct mm_lctx *x, __u8 method,
					  __u16 lport)
{
	__u32 zero = 0;
	struct mm_config *cfg = bpf_map_lookup_elem(&mm_config, &zero);
	struct mm_conn *c = x->c;
	struct mm_scratch *s = x->s;
	struct mm_route_acc *a = &s->ra;
	struct mm_route_memo *m;
	__u64 h;
	__u32 i, id;

	s->rl_rule_idx = 0;
	s->rl_gen = 0;
	s->rl_lport = lport;
	if (!cfg)
		return MM_ROUTE_UNKNOWN;
	s->rl_gen = cfg->route_gen;
	/*
	 * What the head said of its route was kept nowhere between its
	 * reads: user space decides from the head copy (route_acc.bpf.h).
	 */
	if (a->lost)
		return MM_ROUTE_DEFER;
	/* absolute-form targets, hosts past MM_HOST_MAX: user space decides */
	if (!a->target_ok || a->host_state == 3)
		return MM_ROUTE_DEFER;
	h = (a->host_hash ^ (a->path_hash * 31)) + method +
	    ((__u64)c->gw << 8) + ((__u64)lport << 16);
	i = (h ^ (h >> 29)) & (MM_ROUTE_CACHE_SLOTS - 1);
	m = bpf_map_lookup_elem(&mm_route_cache, &i);
	if (m && m->valid && m->gen == s->rl_gen && m->method == method &&
	    m->gw == c->gw && m->lport == lport &&
	    m->host_hash == a->host_hash && m->path_hash == a->path_hash) {
		s->rl_rule_idx = m->rule_idx;
		return m->route_id;
	}
	id = ROUTE_DECIDE(x, method);
	if (m) {
		m->host_hash = a->host_hash;
		m->path_hash = a->path_hash;
		m->gen = s->rl_gen;
		m->route_id = id;
		m->rule_idx = s->rl_rule_idx;
		m->method = method;
		m->gw = c->gw;
		m->lport = lport;
		m->valid = 1;
	}
	return id;
}

#endif /* MM_ROUTE_LOOKUP_BPF_H */
