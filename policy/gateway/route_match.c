// SPDX-License-Identifier: Apache-2.0
/*
 * Route lookup on a compiled table: the BPF steps replayed on the map
 * entries, then the full precedence walk that finishes deferred requests
 * and checks the kernel's answer. See route_match.h.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/gateway/http_method.h"
#include "policy/gateway/route_match.h"

__attribute__((format(printf, 2, 3))) static void say(struct route_result *res,
						      const char *fmt, ...)
{
	size_t used = strlen(res->why);
	va_list ap;

	if (used + 2 >= sizeof(res->why))
		return;
	if (used)
		res->why[used++] = '\n';
	va_start(ap, fmt);
	vsnprintf(res->why + used, sizeof(res->why) - used, fmt, ap);
	va_end(ap);
}

size_t route_match__norm_host(const char *host, size_t len, char *out,
			      size_t outlen)
{
	size_t n = 0;

	if (!outlen)
		return 0;
	if (host && len && host[0] == '[') {
		/* IPv6 literal: keep "[...]", drop the port after it. */
		const char *end = memchr(host, ']', len);

		if (end)
			len = (size_t)(end - host) + 1;
	} else if (host) {
		const char *colon = memchr(host, ':', len);

		if (colon)
			len = (size_t)(colon - host);
	}
	if (host && len && host[len - 1] == '.')
		len--;
	for (size_t i = 0; host && i < len && n + 1 < outlen; i++)
		out[n++] = tolower((unsigned char)host[i]);
	out[n] = '\0';
	return n;
}

bool route_match__prefix_matches(const char *prefix, size_t prefix_len,
				 const char *path, size_t path_len)
{
	if (!path_len || path[0] != '/')
		return false;
	if (path_len < prefix_len || memcmp(prefix, path, prefix_len))
		return false;
	/* Element-wise: "/foo" matches "/foo" and "/foo/..." not "/foobar". */
	return path_len == prefix_len || path[prefix_len] == '/';
}

static bool value_matches(const struct gw_kv_match *kv, const char *v,
			  size_t len)
{
	if (kv->type == GW_VALUE_REGEX)
		return regex__full(kv->re, v, len);
	return strlen(kv->value) == len && !memcmp(kv->value, v, len);
}

/* First request header of that name (names compare case-insensitively). */
static bool headers_match(const struct gw_match *m, const struct http_req *r)
{
	for (size_t i = 0; i < m->nheaders; i++) {
		const struct gw_kv_match *kv = &m->headers[i];
		size_t nl = strlen(kv->name);
		const struct http_header *h = NULL;

		for (size_t j = 0; j < r->nheaders && !h; j++)
			if (r->headers[j].name_len == nl &&
			    !strncasecmp(r->headers[j].name, kv->name, nl))
				h = &r->headers[j];
		if (!h || !value_matches(kv, h->value, h->value_len))
			return false;
	}
	return true;
}

/* First query parameter of that name (names are case-sensitive). */
static bool query_match(const struct gw_match *m, const struct http_req *r)
{
	for (size_t i = 0; i < m->nquery; i++) {
		const struct gw_kv_match *kv = &m->query[i];
		size_t nl = strlen(kv->name);
		/* no query: NULL, and NULL + 0 is UB (found by fuzz_route_match) */
		const char *p = r->query;
		const char *end = p ? p + r->query_len : NULL;
		bool found = false;

		while (p && p < end && !found) {
			const char *amp = memchr(p, '&', (size_t)(end - p));
			const char *pe = amp ? amp : end;
			const char *eq = memchr(p, '=', (size_t)(pe - p));
			const char *ne = eq ? eq : pe;

			if ((size_t)(ne - p) == nl &&
			    !memcmp(p, kv->name, nl)) {
				const char *v = eq ? eq + 1 : pe;

				if (!value_matches(kv, v, (size_t)(pe - v)))
					return false;
				found = true;
			}
			p = amp ? amp + 1 : end;
		}
		if (!found)
			return false;
	}
	return true;
}

static bool path_matches(const struct rc_entry *e, const struct http_req *r)
{
	switch (e->m->path_type) {
	case GW_PATH_EXACT:
		return strlen(e->m->path) == r->path_len &&
		       !memcmp(e->m->path, r->path, r->path_len);
	case GW_PATH_PREFIX:
		return route_match__prefix_matches(e->m->path, e->prefix_len,
						   r->path, r->path_len);
	case GW_PATH_REGEX:
		return regex__full(e->m->path_re, r->path, r->path_len);
	}
	return false;
}

bool route_match__entry_matches(const struct rc_entry *e,
				const struct http_req *r)
{
	return path_matches(e, r) &&
	       (e->m->method == MM_M_ANY || e->m->method == r->method) &&
	       headers_match(e->m, r) && query_match(e->m, r);
}

/* ---- BPF replay ----------------------------------------------------- */

static const struct mm_vhost_val *find_vhost(const struct route_table *t,
					     uint32_t gw, uint32_t port,
					     uint32_t kind, uint64_t hash)
{
	size_t lo = 0, hi = t->nvhost_keys;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct mm_vhost_key *k = &t->vhost_keys[mid];
		int c;

		c = k->gw != gw       ? (k->gw < gw ? -1 : 1)
		    : k->port != port ? (k->port < port ? -1 : 1)
		    : k->kind != kind ? (k->kind < kind ? -1 : 1)
		    : k->hash != hash ? (k->hash < hash ? -1 : 1)
				      : 0;
		if (!c)
			return &t->vhost_vals[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static const struct mm_route_cands *find_cands(const struct route_table *t,
					       uint32_t vhost, uint32_t kind,
					       uint64_t hash)
{
	size_t lo = 0, hi = t->nroute_keys;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct mm_route_key *k = &t->route_keys[mid];
		int c;

		c = k->vhost_id != vhost ? (k->vhost_id < vhost ? -1 : 1)
		    : k->kind != kind    ? (k->kind < kind ? -1 : 1)
		    : k->hash != hash    ? (k->hash < hash ? -1 : 1)
					 : 0;
		if (!c)
			return &t->route_cands[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int32_t bpf_vhost(const struct route_table *t, uint32_t gw,
			 uint32_t port, const char *host, uint32_t *flags,
			 struct route_result *res)
{
	const struct mm_vhost_val *v;
	size_t len = strlen(host);

	v = find_vhost(t, gw, port, MM_VH_EXACT,
		       route_compile__hash(host, len));
	if (v) {
		say(res, "vhost %s (exact)", host);
		goto found;
	}
	for (const char *p = strchr(host, '.'); p; p = strchr(p + 1, '.')) {
		if (p == host)
			continue; /* an empty first label is no label */
		v = find_vhost(t, gw, port, MM_VH_WILDCARD,
			       route_compile__hash(p + 1, strlen(p + 1)));
		if (v) {
			say(res, "vhost *.%s (wildcard; exact %s not present)",
			    p + 1, host);
			goto found;
		}
	}
	v = find_vhost(t, gw, port, MM_VH_CATCHALL, 0);
	if (v) {
		say(res,
		    "vhost * (catch-all; no exact or wildcard vhost for "
		    "\"%s\")",
		    host);
		goto found;
	}
	say(res,
	    "no vhost for host \"%s\" (no exact, wildcard or catch-all "
	    "hostname)",
	    host);
	return -1;
found:
	*flags = v->flags;
	return (int32_t)v->vhost_id;
}

enum walk { W_NONE, W_DECIDE, W_DEFER };

static enum walk bpf_walk(const struct mm_route_cands *c, uint8_t method,
			  uint32_t *route, uint16_t *rule, const char **why)
{
	for (uint32_t i = 0; c && i < c->n && i < MM_ROUTE_CANDS; i++) {
		if (c->c[i].method != MM_M_ANY && c->c[i].method != method)
			continue;
		if (c->c[i].flags & MM_CAND_NEEDS_USER) {
			*why = c->c[i].route_id == MM_ROUTE_DEFER
				       ? "candidate list longer than MM_ROUTE_CANDS"
				       : "first fitting candidate has header/query "
					 "matches";
			return W_DEFER;
		}
		*route = c->c[i].route_id;
		*rule = c->c[i].rule_idx;
		return W_DECIDE;
	}
	return W_NONE;
}

/* Host bytes BPF keeps: up to the port's ':' (trailing '.' included). */
static size_t host_bytes(const struct http_req *r)
{
	const char *colon = memchr(r->host, ':', r->host_len);

	return colon ? (size_t)(colon - r->host) : r->host_len;
}

/* The BPF program's steps on the map entries. */
static void bpf_replay(const struct route_table *t, int32_t vh, uint32_t flags,
		       const struct http_req *r, struct route_result *res)
{
	uint64_t hashes[MM_PATH_PREFIXES + 1];
	size_t nh = 0;
	const char *why = NULL;
	enum walk w;

	res->bpf_route_id = MM_ROUTE_UNMATCHED;
	res->bpf_rule_idx = 0;
	if (r->absolute_form || !r->path_len || r->path[0] != '/') {
		why = "request target is not origin-form (\"/...\")";
		goto defer;
	}
	if (r->host && host_bytes(r) > MM_HOST_MAX) {
		why = "Host longer than MM_HOST_MAX";
		goto defer;
	}
	if (vh < 0)
		goto done;
	if (flags & MM_VHOST_DEEP) {
		size_t slashes = 0;

		for (size_t i = 0; i < r->path_len; i++)
			slashes += r->path[i] == '/';
		/* Only then can a prefix past the hashed boundaries match. */
		if (slashes > MM_PATH_PREFIXES) {
			why = "vhost has a prefix deeper than MM_PATH_PREFIXES "
			      "and the path is deeper still";
			goto defer;
		}
	}
	w = bpf_walk(find_cands(t, (uint32_t)vh, MM_PATH_EXACT,
				route_compile__hash(r->path, r->path_len)),
		     r->method, &res->bpf_route_id, &res->bpf_rule_idx, &why);
	if (w == W_DECIDE) {
		why = "Exact list";
		goto done;
	}
	if (w == W_NONE && (flags & MM_VHOST_HAS_REGEX)) {
		w = W_DEFER;
		why = "vhost has RegularExpression paths";
	}
	if (w == W_DEFER)
		goto defer;
	for (size_t i = 0; i < r->path_len && nh < MM_PATH_PREFIXES; i++)
		if (r->path[i] == '/')
			hashes[nh++] = route_compile__hash(r->path, i);
	hashes[nh++] = route_compile__hash(r->path, r->path_len);
	/* Longest first: the whole path, then boundaries last to first. */
	for (size_t i = nh; i-- > 0;) {
		w = bpf_walk(find_cands(t, (uint32_t)vh, MM_PATH_PREFIX,
					hashes[i]),
			     r->method, &res->bpf_route_id, &res->bpf_rule_idx,
			     &why);
		if (w == W_DECIDE) {
			why = "PathPrefix list";
			goto done;
		}
		if (w == W_DEFER)
			goto defer;
	}
	res->bpf_route_id = MM_ROUTE_UNMATCHED;
	why = "no candidate fits";
	goto done;
defer:
	res->bpf_route_id = MM_ROUTE_DEFER;
	res->bpf_rule_idx = 0;
	res->deferred = true;
	say(res, "kernel table: defers to user space (%s)", why);
	return;
done:
	if (res->bpf_route_id == MM_ROUTE_UNMATCHED)
		say(res, "kernel table: unmatched%s%s%s", why ? " (" : "",
		    why ? why : "", why ? ")" : "");
	else
		say(res, "kernel table: decides %s/%s rule %u (%s)",
		    t->routes[res->bpf_route_id].ns,
		    t->routes[res->bpf_route_id].name, res->bpf_rule_idx, why);
}

/* ---- Explanation of the precedence step that decided ---------------- */

static int describe(const struct route_table *t, const struct rc_entry *e,
		    char *buf, size_t len)
{
	const struct gw_match *m = e->m;

	switch (m->path_type) {
	case GW_PATH_EXACT:
		return snprintf(buf, len, "Exact path %s", m->path);
	case GW_PATH_REGEX:
		return snprintf(buf, len, "RegularExpression %s", m->path);
	case GW_PATH_PREFIX:
		return snprintf(buf, len, "PathPrefix %.*s%s",
				(int)e->prefix_len, m->path,
				e->prefix_len ? "" : "/");
	}
	return 0;
}

static void why_beats(const struct route_table *t, const struct rc_entry *w,
		      const struct rc_entry *l, struct route_result *res)
{
	const struct rc_route *rw = &t->routes[w->route_id];
	const struct rc_route *rl = &t->routes[l->route_id];
	const struct gw_match *a = w->m, *b = l->m;
	char dw[160], dl[160];

	describe(t, w, dw, sizeof(dw));
	describe(t, l, dl, sizeof(dl));
	if (a->path_type != b->path_type)
		say(res, "%s beats %s (%s/%s rule %u)", dw, dl, rl->ns,
		    rl->name, l->rule_idx);
	else if (a->path_type == GW_PATH_REGEX &&
		 strlen(a->path) != strlen(b->path))
		say(res, "%s beats shorter %s (%s/%s rule %u)", dw, dl, rl->ns,
		    rl->name, l->rule_idx);
	else if (a->path_type == GW_PATH_PREFIX &&
		 w->prefix_len != l->prefix_len)
		say(res, "longest prefix: %s beats %s (%s/%s rule %u)", dw, dl,
		    rl->ns, rl->name, l->rule_idx);
	else if ((a->method == MM_M_ANY) != (b->method == MM_M_ANY))
		say(res,
		    "%s: method match %s beats no method match "
		    "(%s/%s rule %u)",
		    dw, http_method__name(a->method), rl->ns, rl->name,
		    l->rule_idx);
	else if (a->nheaders != b->nheaders)
		say(res, "%s: more header matches (%zu vs %zu) (%s/%s rule %u)",
		    dw, a->nheaders, b->nheaders, rl->ns, rl->name,
		    l->rule_idx);
	else if (a->nquery != b->nquery)
		say(res,
		    "%s: more query param matches (%zu vs %zu) (%s/%s "
		    "rule %u)",
		    dw, a->nquery, b->nquery, rl->ns, rl->name, l->rule_idx);
	else if (w->route_id != l->route_id && rw->src->created &&
		 (!rl->src->created ||
		  rw->src->created_s != rl->src->created_s))
		say(res,
		    "%s: tie; oldest route wins: %s/%s created %s, "
		    "%s/%s created %s",
		    dw, rw->ns, rw->name, rw->src->created, rl->ns, rl->name,
		    rl->src->created ? rl->src->created : "(no timestamp)");
	else if (w->route_id != l->route_id)
		say(res, "%s: tie; same age, \"%s/%s\" sorts before \"%s/%s\"",
		    dw, rw->ns, rw->name, rl->ns, rl->name);
	else if (w->rule_idx != l->rule_idx)
		say(res,
		    "%s: tie within the route; first matching rule wins "
		    "(rule %u before rule %u)",
		    dw, w->rule_idx, l->rule_idx);
	else
		say(res, "%s: match %u of rule %u (first matching match)", dw,
		    w->match_idx, w->rule_idx);
}

/* ---- Lookup ---------------------------------------------------------- */

int route_match__lookup(const struct route_table *t, uint32_t gw, uint32_t port,
			const struct http_req *r, struct route_result *res)
{
	char host[MM_HOST_MAX * 2];
	const struct rc_vhost *vh;
	const struct rc_entry *win = NULL, *next = NULL;
	size_t skipped = 0;
	uint32_t flags = 0;

	memset(res, 0, sizeof(*res));
	res->route_id = MM_ROUTE_UNMATCHED;
	route_match__norm_host(r->host, r->host ? r->host_len : 0, host,
			       sizeof(host));
	if (gw >= t->nslots && gw) {
		say(res, "gateway slot %u is not in this table", gw);
		res->vhost_id = -1;
		res->bpf_route_id = MM_ROUTE_UNMATCHED;
		return 0;
	}
	res->vhost_id = bpf_vhost(t, gw, port, host, &flags, res);
	bpf_replay(t, res->vhost_id, flags, r, res);
	if (res->vhost_id < 0)
		return 0;
	vh = &t->vhosts[res->vhost_id];
	for (size_t i = 0; i < vh->nentries && !next; i++) {
		if (!route_match__entry_matches(&vh->entries[i], r)) {
			skipped += !win && path_matches(&vh->entries[i], r);
			continue;
		}
		if (!win)
			win = &vh->entries[i];
		else
			next = &vh->entries[i];
	}
	if (!win) {
		say(res, "no rule in vhost \"%s\" matches (%zu matches tried)",
		    vh->host[0] ? vh->host : "*", vh->nentries);
	} else {
		char d[160];

		res->route_id = win->route_id;
		res->rule_idx = win->rule_idx;
		res->match_idx = win->match_idx;
		if (next) {
			why_beats(t, win, next, res);
		} else {
			describe(t, win, d, sizeof(d));
			say(res, "%s: the only matching rule in the vhost", d);
		}
		if (skipped)
			say(res,
			    "%zu higher-precedence match%s for this path "
			    "did not fit (method, headers or query)",
			    skipped, skipped == 1 ? "" : "es");
	}
	if (!res->deferred && (res->bpf_route_id != res->route_id ||
			       (win && res->bpf_rule_idx != res->rule_idx))) {
		say(res, "BUG: kernel table answer differs from the Gateway "
			 "API order");
		return -EPROTO;
	}
	return 0;
}

/*
 * Did a match that ranks above the answer fail only on its headers? With
 * a truncated head that header may have been there.
 */
static bool cut_header_decides(const struct route_table *t,
			       const struct http_req *r,
			       const struct route_result *res)
{
	const struct rc_vhost *vh;

	if (res->vhost_id < 0)
		return false;
	vh = &t->vhosts[res->vhost_id];
	for (size_t i = 0; i < vh->nentries; i++) {
		const struct rc_entry *e = &vh->entries[i];

		if (e->route_id == res->route_id &&
		    e->rule_idx == res->rule_idx &&
		    e->match_idx == res->match_idx)
			return false;
		if (e->m->nheaders && path_matches(e, r) &&
		    (e->m->method == MM_M_ANY || e->m->method == r->method) &&
		    query_match(e->m, r) && !headers_match(e->m, r))
			return true;
	}
	return false;
}

int route_match__lookup_head(const struct route_table *t, uint32_t gw,
			     uint32_t port, const char *head, size_t len,
			     bool truncated, struct route_result *res)
{
	struct http_req req;
	int ret = route_match__parse_head(head, len, &req);

	if (ret == -ENODATA ||
	    (!ret && !req.host && (truncated || req.truncated))) {
		memset(res, 0, sizeof(*res));
		res->route_id = MM_ROUTE_UNKNOWN;
		res->bpf_route_id = MM_ROUTE_DEFER;
		res->vhost_id = -1;
		res->deferred = true;
		snprintf(res->why, sizeof(res->why),
			 "request head cut before "
			 "%s",
			 ret ? "the end of the request line" : "Host");
		return 0;
	}
	if (ret)
		return ret;
	ret = route_match__lookup(t, gw, port, &req, res);
	if (ret || !(truncated || req.truncated) ||
	    !cut_header_decides(t, &req, res))
		return ret;
	/* A header past the cut might have picked a better rule. */
	res->route_id = MM_ROUTE_UNKNOWN;
	res->rule_idx = 0;
	say(res, "request head cut: a higher-precedence match needs a header "
		 "that may be in the lost part");
	return 0;
}

/* ---- Request head parsing -------------------------------------------- */

static bool is_tchar(char c)
{
	return isalnum((unsigned char)c) || strchr("!#$%&'*+-.^_`|~", c);
}

/* Next line without its CR LF; NULL when the buffer ends first. */
static const char *next_line(const char **p, const char *end, size_t *len)
{
	const char *s = *p, *nl = memchr(s, '\n', (size_t)(end - s));

	if (!nl)
		return NULL;
	*len = (size_t)(nl - s);
	if (*len && s[*len - 1] == '\r')
		(*len)--;
	*p = nl + 1;
	return s;
}

static int parse_target(const char *t, size_t len, struct http_req *r)
{
	const char *q;

	if (len > 7 && (!strncasecmp(t, "http://", 7) ||
			(len > 8 && !strncasecmp(t, "https://", 8)))) {
		/* absolute-form: its authority replaces Host (RFC 9112 3.2.2) */
		const char *a = t + (t[4] == ':' ? 7 : 8), *end = t + len;
		const char *slash = memchr(a, '/', (size_t)(end - a));
		const char *qm = memchr(a, '?', (size_t)(end - a));

		if (qm && (!slash || qm < slash))
			slash = qm;
		r->host = a;
		r->host_len = (size_t)((slash ? slash : end) - a);
		r->absolute_form = true;
		t = slash ? slash : end;
		len = (size_t)(end - t);
		if (!len || t[0] == '?') {
			r->path = "/";
			r->path_len = 1;
			if (len) {
				r->query = t + 1;
				r->query_len = len - 1;
			}
			return 1;
		}
	}
	q = memchr(t, '?', len);
	r->path = t;
	r->path_len = q ? (size_t)(q - t) : len;
	if (q) {
		r->query = q + 1;
		r->query_len = len - r->path_len - 1;
	}
	return r->host ? 1 : 0;
}

int route_match__parse_head(const char *buf, size_t len, struct http_req *req)
{
	const char *p = buf, *end = buf + len, *line, *sp1, *sp2;
	size_t ll;
	bool host_from_target;

	memset(req, 0, sizeof(*req));
	line = next_line(&p, end, &ll);
	if (!line) {
		/* Is what we have the start of a request line at all? */
		for (size_t i = 0; i < len && buf[i] != ' '; i++)
			if (!is_tchar(buf[i]))
				return -EINVAL;
		return -ENODATA;
	}
	sp1 = memchr(line, ' ', ll);
	sp2 = sp1 ? memchr(sp1 + 1, ' ', ll - (size_t)(sp1 + 1 - line)) : NULL;
	if (!sp1 || !sp2 || sp1 == line || sp2 == sp1 + 1)
		return -EINVAL;
	for (const char *c = line; c < sp1; c++)
		if (!is_tchar(*c))
			return -EINVAL;
	if ((size_t)(line + ll - sp2 - 1) != 8 ||
	    memcmp(sp2 + 1, "HTTP/1.", 7) || !isdigit((unsigned char)sp2[8]))
		return -EINVAL;
	req->method = http_method__parse(line, (size_t)(sp1 - line));
	host_from_target = parse_target(sp1 + 1, (size_t)(sp2 - sp1 - 1), req);
	req->truncated = true;
	while ((line = next_line(&p, end, &ll))) {
		const char *colon, *v, *ve;

		if (!ll) {
			req->truncated = false;
			break;
		}
		colon = memchr(line, ':', ll);
		/* obs-fold continuations and junk lines carry no match. */
		if (!colon || colon == line || line[0] == ' ' ||
		    line[0] == '\t')
			continue;
		v = colon + 1;
		ve = line + ll;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if (!host_from_target && !req->host && colon - line == 4 &&
		    !strncasecmp(line, "host", 4)) {
			req->host = v;
			req->host_len = (size_t)(ve - v);
		}
		if (req->nheaders == HTTP_REQ_MAX_HEADERS)
			continue;
		req->headers[req->nheaders].name = line;
		req->headers[req->nheaders].name_len = (size_t)(colon - line);
		req->headers[req->nheaders].value = v;
		req->headers[req->nheaders].value_len = (size_t)(ve - v);
		req->nheaders++;
	}
	return 0;
}
