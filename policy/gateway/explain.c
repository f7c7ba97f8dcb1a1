// SPDX-License-Identifier: Apache-2.0
/*
 * `milometer explain` (its flags: agent/cmd/explain.c). Loads the manifests, compiles the route table exactly as the agent does,
 * and looks the request up with route_match__lookup(): the kernel table's
 * answer and the Gateway API walk that checks (or finishes) it.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/gateway/explain.h"
#include "policy/gateway/gateway_api.h"
#include "policy/gateway/http_method.h"
#include "policy/gateway/route_compile.h"
#include "policy/gateway/route_match.h"

static bool is_tchar(char c)
{
	return isalnum((unsigned char)c) || strchr("!#$%&'*+-.^_`|~", c);
}

int explain__add_header(struct http_req *req, const char *arg, FILE *errs)
{
	const char *colon = strchr(arg, ':'), *v;
	struct http_header *h;

	if (!colon || colon == arg) {
		fprintf(errs,
			"milometer explain: header \"%s\": write it as "
			"'Name: value'\n",
			arg);
		return -EINVAL;
	}
	for (const char *c = arg; c < colon; c++)
		if (!is_tchar(*c)) {
			fprintf(errs,
				"milometer explain: header name in "
				"\"%s\" has a character not allowed in "
				"HTTP header names\n",
				arg);
			return -EINVAL;
		}
	if (req->nheaders == HTTP_REQ_MAX_HEADERS) {
		fprintf(errs, "milometer explain: more than %d headers\n",
			HTTP_REQ_MAX_HEADERS);
		return -E2BIG;
	}
	for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
		;
	h = &req->headers[req->nheaders++];
	h->name = arg;
	h->name_len = (size_t)(colon - arg);
	h->value = v;
	h->value_len = strlen(v);
	while (h->value_len &&
	       (v[h->value_len - 1] == ' ' || v[h->value_len - 1] == '\t'))
		h->value_len--;
	if (h->name_len == 4 && !strncasecmp(arg, "host", 4)) {
		req->host = h->value;
		req->host_len = h->value_len;
	}
	return 0;
}

/* ":PORT" at the end of an authority ("[::1]:8080" included), else 0. */
static uint32_t authority_port(const char *a, size_t len)
{
	size_t i = len;
	uint32_t port = 0, mul = 1;

	while (i && isdigit((unsigned char)a[i - 1]) && len - i < 5)
		i--;
	if (!i || i == len || a[i - 1] != ':')
		return 0;
	for (size_t k = len; k > i; k--, mul *= 10)
		port += (uint32_t)(a[k - 1] - '0') * mul;
	return port <= 65535 ? port : 0;
}

/* *port: the URL's port, or its scheme's (80 for a bare path). */
static int parse_url(const char *url, struct http_req *req, uint32_t *port,
		     bool *by_scheme, FILE *errs)
{
	const char *p = url, *end, *q;
	bool host_set = req->host != NULL;

	*port = 80;
	*by_scheme = true;
	if (!strncasecmp(p, "http://", 7) || !strncasecmp(p, "https://", 8)) {
		const char *a = p + (p[4] == ':' ? 7 : 8);

		end = a + strcspn(a, "/?#");
		if (end == a) {
			fprintf(errs,
				"milometer explain: URL \"%s\" has no "
				"host\n",
				url);
			return -EINVAL;
		}
		if (p[4] != ':')
			*port = 443;
		if (authority_port(a, (size_t)(end - a))) {
			*port = authority_port(a, (size_t)(end - a));
			*by_scheme = false;
		}
		if (!host_set) {
			req->host = a;
			req->host_len = (size_t)(end - a);
		}
		p = end;
	} else if (p[0] != '/') {
		fprintf(errs,
			"milometer explain: URL \"%s\": use "
			"http://host/path or /path with -H 'Host: ...'\n",
			url);
		return -EINVAL;
	}
	for (const char *c = p; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f) {
			fprintf(errs,
				"milometer explain: URL \"%s\" contains "
				"a space or control character; percent-encode "
				"it\n",
				url);
			return -EINVAL;
		}
	/* A fragment never reaches the server. */
	end = p + strcspn(p, "#");
	q = memchr(p, '?', (size_t)(end - p));
	if (p == end || *p == '?') {
		req->path = "/";
		req->path_len = 1;
	} else {
		req->path = p;
		req->path_len = (size_t)((q ? q : end) - p);
	}
	if (q) {
		req->query = q + 1;
		req->query_len = (size_t)(end - q - 1);
	}
	return 0;
}

/* -v: the vhost's whole precedence list, what matched, what won. */
static void print_list(const struct route_table *t, const struct http_req *req,
		       const struct route_result *res, FILE *out)
{
	const struct rc_vhost *vh;

	if (res->vhost_id < 0)
		return;
	vh = &t->vhosts[res->vhost_id];
	fprintf(out, "precedence list of vhost %s (%zu matches):\n",
		vh->host[0] ? vh->host : "*", vh->nentries);
	for (size_t i = 0; i < vh->nentries; i++) {
		const struct rc_entry *e = &vh->entries[i];
		const struct gw_match *m = e->m;
		const struct rc_route *r = &t->routes[e->route_id];
		bool won = e->route_id == res->route_id &&
			   e->rule_idx == res->rule_idx &&
			   e->match_idx == res->match_idx;

		fprintf(out, "  %3zu %s %-11s %.*s%s", i + 1,
			won                                  ? "=>"
			: route_match__entry_matches(e, req) ? "ok"
							     : "  ",
			m->path_type == GW_PATH_EXACT   ? "Exact"
			: m->path_type == GW_PATH_REGEX ? "RegularExpr"
							: "PathPrefix",
			(int)(m->path_type == GW_PATH_PREFIX ? e->prefix_len
							     : strlen(m->path)),
			m->path,
			m->path_type == GW_PATH_PREFIX && !e->prefix_len ? "/"
									 : "");
		if (m->method != MM_M_ANY)
			fprintf(out, " method=%s",
				http_method__name(m->method));
		for (size_t h = 0; h < m->nheaders; h++)
			fprintf(out, " header:%s%s%s", m->headers[h].name,
				m->headers[h].type == GW_VALUE_REGEX ? "~"
								     : "=",
				m->headers[h].value);
		for (size_t q = 0; q < m->nquery; q++)
			fprintf(out, " query:%s%s%s", m->query[q].name,
				m->query[q].type == GW_VALUE_REGEX ? "~" : "=",
				m->query[q].value);
		fprintf(out, "  %s/%s rule %u match %u\n", r->ns, r->name,
			e->rule_idx, e->match_idx);
	}
}

/*
 * Which listener accepted the request: --listener's, or the one on the
 * URL's port that takes its host (the most specific hostname). Sets *port
 * to the listener port whose vhosts the table keys (0: every listener's
 * merged, as the agent attributes a socket on no listener's port) and
 * writes the reason. -ENOENT when --listener names none.
 */
static int choose_listener(const struct gw_model *m,
			   const struct route_table *t, const char *gateway,
			   const char *name, uint32_t url_port, bool by_scheme,
			   const struct http_req *req, uint32_t *port,
			   char *why, size_t len)
{
	char host[MM_HOST_MAX * 2];
	const struct gw_listener *l = NULL;
	const struct gw_gateway *g = NULL;
	size_t ngws = 0;
	int n;

	route_match__norm_host(req->host, req->host ? req->host_len : 0, host,
			       sizeof(host));
	for (size_t i = 0; i < m->ngateways && !l; i++) {
		const struct gw_gateway *gi = m->gateways[i];
		char id[512];

		snprintf(id, sizeof(id), "%s/%s", gi->ns, gi->name);
		if (gateway && strcmp(gateway, id))
			continue;
		ngws++;
		for (size_t k = 0; name && k < gi->nlisteners && !l; k++)
			if (!strcmp(gi->listeners[k].name, name))
				l = &gi->listeners[k];
		if (!name)
			l = route_compile__listener_for(gi, url_port, host);
		g = gi;
	}
	if (name && !l) {
		snprintf(why, len, "no listener named \"%s\" in %s", name,
			 gateway ? gateway : "the manifests' Gateways");
		return -ENOENT;
	}
	*port = name ? l->port : url_port;
	if (!route_compile__port_keyed(t, 0, *port))
		*port = 0;
	if (!l) {
		snprintf(
			why, len,
			"listener: none of %s on port %u takes "
			"host \"%s\"; %s",
			gateway ? gateway : "the Gateways", url_port, host,
			*port ? "no route applies"
			      : "looked up in the routes of every listener merged, "
				"as the agent does for a socket on no listener's "
				"port");
		return 0;
	}
	n = snprintf(why, len, "listener %s of %s/%s (port %u%s%s): ", l->name,
		     g->ns, g->name, l->port, l->hostname ? ", hostname " : "",
		     l->hostname ? l->hostname : "");
	if (n < 0 || (size_t)n >= len)
		return 0;
	if (name)
		snprintf(why + n, len - n, "--listener%s",
			 *port ? ""
			       : "; its Gateway has one port: every listener's "
				 "routes together");
	else
		snprintf(why + n, len - n, "%s port %u%s%s",
			 by_scheme ? "the URL scheme's" : "the URL's", url_port,
			 ngws > 1 || route_compile__listener_for(g, url_port,
								 "") != l
				 ? ", most specific hostname taking the host"
				 : "",
			 *port ? ""
			       : "; its Gateway has one port: every "
				 "listener's routes together");
	return 0;
}

static void print_answer(const struct route_table *t,
			 const struct route_result *res, FILE *out)
{
	const struct rc_route *r;
	char cluster[512];

	if (res->route_id == MM_ROUTE_UNMATCHED) {
		fprintf(out, "unmatched\n%s\n", res->why);
		return;
	}
	r = &t->routes[res->route_id];
	fprintf(out, "%s/%s rule %u\n%s\n", r->ns, r->name, res->rule_idx,
		res->why);
	if (!route_compile__cluster_name(t, res->route_id, res->rule_idx,
					 cluster, sizeof(cluster)))
		fprintf(out, "cluster %s, gateway %s/%s, %s\n", cluster,
			r->gw_ns, r->gw_name,
			res->deferred ? "attributed by user space"
				      : "attributed in the kernel");
}

int explain__request(const struct explain_opts *o, struct http_req *req,
		     const char *url, FILE *out, FILE *errs)
{
	const char *dir = o->manifests, *gateway = o->gateway;
	const char *method = o->method ? o->method : "GET";
	char lwhy[768];
	uint32_t url_port, port;
	bool by_scheme;
	struct gw_model *m = NULL;
	struct route_table *t = NULL;
	struct route_result res;
	char err[512] = "";
	int ret = 2;

	for (const char *p = method; *p; p++)
		if (!is_tchar(*p)) {
			fprintf(errs,
				"milometer explain: method \"%s\" is not "
				"an HTTP token\n",
				method);
			goto cleanup;
		}
	if (!*method) {
		fprintf(errs, "milometer explain: -X needs a method\n");
		goto cleanup;
	}
	req->method = http_method__parse(method, strlen(method));
	if (parse_url(url, req, &url_port, &by_scheme, errs))
		goto cleanup;
	m = gateway_api__new();
	if (!m) {
		fprintf(errs, "milometer explain: out of memory\n");
		goto cleanup;
	}
	if (gateway_api__load_dir(m, dir, err, sizeof(err)) ||
	    route_compile__build(m, gateway, 1, &t, err, sizeof(err))) {
		fprintf(errs, "milometer explain: %s\n", err);
		goto cleanup;
	}
	/* a bad file or object is left out, as the agent leaves it out */
	for (size_t i = 0; i < m->nrejected; i++)
		fprintf(errs, "milometer explain: left out: %s\n",
			m->rejected[i]);
	gateway_api__log_dropped(m, errs, "milometer explain: ");
	/* a Host header's port is the one the client connected to */
	if (req->host && authority_port(req->host, req->host_len)) {
		url_port = authority_port(req->host, req->host_len);
		by_scheme = false;
	}
	if (choose_listener(m, t, gateway, o->listener, url_port, by_scheme,
			    req, &port, lwhy, sizeof(lwhy))) {
		fprintf(errs, "milometer explain: %s\n", lwhy);
		goto cleanup;
	}
	if (route_match__lookup(t, 0, port, req, &res)) {
		fprintf(errs, "milometer explain: %s\n", res.why);
		goto cleanup;
	}
	print_answer(t, &res, out);
	fprintf(out, "%s\n", lwhy);
	if (o->verbose)
		print_list(t, req, &res, out);
	for (size_t i = 0; i < t->ndetached; i++)
		fprintf(out, "note: HTTPRoute %s/%s is not attached: %s\n",
			t->detached[i].src->ns, t->detached[i].src->name,
			t->detached[i].why);
	if (!t->nroutes)
		fprintf(out, "note: no HTTPRoute in %s is attached to %s\n",
			dir, gateway ? gateway : "any Gateway there");
	ret = 0;
cleanup:
	route_compile__free(t);
	gateway_api__free(m);
	return ret;
}
