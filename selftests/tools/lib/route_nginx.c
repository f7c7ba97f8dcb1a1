// SPDX-License-Identifier: Apache-2.0
/*
 * Compiled route table -> nginx.conf (see route_nginx.h for the scheme and
 * the subset of the Gateway API it can express).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/gateway/http_method.h"
#include "selftests/tools/lib/route_nginx.h"

struct gen {
	const struct route_table *t;
	const struct route_nginx_opts *o;
	FILE *out;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int refuse(struct gen *g,
							const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g->err, g->errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/*
 * A double-quoted nginx string: the config parser turns \\ into \ and \"
 * into ", and leaves other bytes alone, so doubling every backslash and
 * escaping quotes round-trips exactly.
 */
static void put_quoted(FILE *out, const char *s, size_t len)
{
	fputc('"', out);
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\\' || s[i] == '"')
			fputc('\\', out);
		fputc(s[i], out);
	}
	fputc('"', out);
}

/* A literal inside a PCRE pattern. */
static void re_literal(char *dst, size_t cap, const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len && n + 3 < cap; i++) {
		if (strchr("\\.^$|?*+()[]{}", s[i]))
			dst[n++] = '\\';
		dst[n++] = s[i];
	}
	dst[n] = '\0';
}

/* $http_NAME for a header: nginx maps '-' to '_' and lower-cases. */
static int header_var(struct gen *g, const char *name, char *buf, size_t cap)
{
	size_t n = 0;

	for (const char *p = name; *p; p++) {
		if (!isalnum((unsigned char)*p) && *p != '-')
			return refuse(g,
				      "header name \"%s\": gen_nginx handles "
				      "[A-Za-z0-9-] only",
				      name);
		if (n + 1 >= cap)
			return refuse(g, "header name \"%s\" too long", name);
		buf[n++] = *p == '-' ? '_' : tolower((unsigned char)*p);
	}
	buf[n] = '\0';
	return 0;
}

static int no_dollar(struct gen *g, const char *what, const char *v)
{
	if (strchr(v, '$'))
		return refuse(g,
			      "%s \"%s\": gen_nginx cannot express '$' in "
			      "a compared value",
			      what, v);
	return 0;
}

/* One condition of an entry: `if (COND) { set $mm_c "${mm_c}x"; }` */
static void cond_open(struct gen *g)
{
	fputs("\tif (", g->out);
}

static void cond_close(struct gen *g)
{
	fputs(") { set $mm_c \"${mm_c}x\"; }\n", g->out);
}

static int write_kv(struct gen *g, const struct gw_kv_match *kv, bool header)
{
	char var[160], pat[1024];
	int err;

	if (header) {
		err = header_var(g, kv->name, var, sizeof(var));
		if (err)
			return err;
		cond_open(g);
		fprintf(g->out, "$http_%s %s ", var,
			kv->type == GW_VALUE_REGEX ? "~" : "=");
		if (kv->type == GW_VALUE_REGEX) {
			snprintf(pat, sizeof(pat), "^(?:%s)$", kv->value);
		} else {
			err = no_dollar(g, "header value", kv->value);
			if (err)
				return err;
			snprintf(pat, sizeof(pat), "%s", kv->value);
		}
		put_quoted(g->out, pat, strlen(pat));
		cond_close(g);
		return 0;
	}
	/*
	 * The first parameter of that name decides (as route_match does):
	 * skip parameters with other names, then name=value up to '&'.
	 */
	re_literal(var, sizeof(var), kv->name, strlen(kv->name));
	if (kv->type == GW_VALUE_REGEX) {
		snprintf(pat, sizeof(pat),
			 "^(?:(?!%s(?:[=&]|$))[^&]*&)*%s=(?:%s)(?:&|$)", var,
			 var, kv->value);
	} else {
		char lit[512];

		re_literal(lit, sizeof(lit), kv->value, strlen(kv->value));
		snprintf(pat, sizeof(pat),
			 "^(?:(?!%s(?:[=&]|$))[^&]*&)*%s=%s(?:&|$)", var, var,
			 lit);
	}
	cond_open(g);
	fputs("$args ~ ", g->out);
	put_quoted(g->out, pat, strlen(pat));
	cond_close(g);
	return 0;
}

/* Upstream for a rule: "mm_rID_RULE", "mm_500" when it has no backends. */
static const char *rule_upstream(const struct route_table *t, uint32_t id,
				 unsigned int rule, char *buf, size_t cap)
{
	const struct gw_rule *r = &t->routes[id].src->rules[rule];
	uint32_t w = 0;

	for (size_t i = 0; i < r->nbackends; i++)
		w += r->backends[i].weight;
	if (!w)
		return "mm_500";
	snprintf(buf, cap, "mm_r%u_%u", id, rule);
	return buf;
}

static int write_entry(struct gen *g, const struct rc_entry *e)
{
	const struct rc_route *r = &g->t->routes[e->route_id];
	const struct gw_match *m = e->m;
	char pat[1024], up[64];
	unsigned int nconds = 1;
	int err;

	fprintf(g->out, "\t# %s/%s rule %u match %u\n\tset $mm_c \"\";\n",
		r->ns, r->name, e->rule_idx, e->match_idx);
	cond_open(g);
	switch (m->path_type) {
	case GW_PATH_EXACT:
		err = no_dollar(g, "Exact path", m->path);
		if (err)
			return err;
		fputs("$mm_path = ", g->out);
		put_quoted(g->out, m->path, strlen(m->path));
		break;
	case GW_PATH_PREFIX:
		re_literal(pat, sizeof(pat) - 8, m->path, e->prefix_len);
		/* element-wise: the prefix, then '/' or the end; "" is "/" */
		strcat(pat, e->prefix_len ? "(?:/|$)" : "/");
		fputs("$mm_path ~ \"^", g->out);
		for (const char *p = pat; *p; p++) {
			if (*p == '\\' || *p == '"')
				fputc('\\', g->out);
			fputc(*p, g->out);
		}
		fputc('"', g->out);
		break;
	case GW_PATH_REGEX:
		snprintf(pat, sizeof(pat), "^(?:%s)$", m->path);
		fputs("$mm_path ~ ", g->out);
		put_quoted(g->out, pat, strlen(pat));
		break;
	}
	cond_close(g);
	if (m->method != MM_M_ANY) {
		cond_open(g);
		fprintf(g->out, "$request_method = %s",
			http_method__name(m->method));
		cond_close(g);
		nconds++;
	}
	for (size_t i = 0; i < m->nheaders; i++, nconds++) {
		err = write_kv(g, &m->headers[i], true);
		if (err)
			return err;
	}
	for (size_t i = 0; i < m->nquery; i++, nconds++) {
		err = write_kv(g, &m->query[i], false);
		if (err)
			return err;
	}
	fputs("\tif ($mm_c = \"", g->out);
	for (unsigned int i = 0; i < nconds; i++)
		fputc('x', g->out);
	fprintf(g->out,
		"\") { set $route \"%s/%s rule %u\"; set $mm_up %s; }\n", r->ns,
		r->name, e->rule_idx,
		rule_upstream(g->t, e->route_id, e->rule_idx, up, sizeof(up)));
	return 0;
}

static const char *find_upstream(struct gen *g, const struct gw_backend *b)
{
	char full[512];

	snprintf(full, sizeof(full), "%s/%s", b->ns, b->name);
	for (size_t i = 0; i < g->o->nupstreams; i++)
		if (!strcmp(g->o->upstreams[i].name, full))
			return g->o->upstreams[i].addr;
	for (size_t i = 0; i < g->o->nupstreams; i++)
		if (!strcmp(g->o->upstreams[i].name, b->name))
			return g->o->upstreams[i].addr;
	return NULL;
}

static int write_upstreams(struct gen *g)
{
	const struct route_table *t = g->t;
	char up[64];

	for (uint32_t id = 0; id < t->nroutes; id++) {
		const struct gw_route *r = t->routes[id].src;

		for (unsigned int k = 0; k < r->nrules; k++) {
			const struct gw_rule *rule = &r->rules[k];

			if (!strcmp(rule_upstream(t, id, k, up, sizeof(up)),
				    "mm_500"))
				continue;
			fprintf(g->out, "    upstream %s {\n", up);
			for (size_t i = 0; i < rule->nbackends; i++) {
				const struct gw_backend *b = &rule->backends[i];
				const char *addr = find_upstream(g, b);

				if (!b->weight)
					continue;
				if (!addr)
					return refuse(
						g,
						"backendRef %s/%s of "
						"HTTPRoute %s/%s rule %u: "
						"give --upstream %s=HOST:PORT",
						b->ns, b->name, r->ns, r->name,
						k, b->name);
				fprintf(g->out, "\tserver %s weight=%u;\n",
					addr, b->weight);
			}
			fputs("    }\n", g->out);
		}
	}
	return 0;
}

static void server_tail(struct gen *g)
{
	fputs("\tlocation / {\n"
	      "\t    if ($mm_up = mm_404) { return 404; }\n"
	      "\t    if ($mm_up = mm_500) { return 500; }\n"
	      "\t    proxy_pass http://$mm_up;\n"
	      "\t}\n"
	      "    }\n",
	      g->out);
}

static void server_head(struct gen *g, const char *name, bool dflt)
{
	fprintf(g->out,
		"    server {\n"
		"\tlisten %s%s;\n"
		"\tserver_name %s;\n"
		"\tset $route \"unmatched\";\n"
		"\tset $mm_up mm_404;\n",
		g->o->listen, dflt ? " default_server" : "", name);
}

int route_nginx__write(const struct route_table *t,
		       const struct route_nginx_opts *o, FILE *out, char *err,
		       size_t errlen)
{
	struct gen g = { t, o, out, err, errlen };
	bool have_default = false;
	int ret;

	fprintf(out,
		"# Generated by gen_nginx from HTTPRoutes (route table gen %u).\n"
		"# Run: nginx -p DIR -e DIR/error.log -c DIR/nginx.conf\n"
		"worker_processes 1;\n"
		"pid nginx.pid;\n"
		"events { worker_connections 1024; }\n"
		"http {\n"
		"    log_format mm escape=none \"$route\\t$status\\t"
		"$request_time\\t$upstream_response_time\\t$upstream_status\\t"
		"$request_method\\t$host\\t$request_uri\";\n"
		"    access_log %s mm;\n"
		"    client_body_temp_path tmp/body;\n"
		"    proxy_temp_path tmp/proxy;\n"
		"    fastcgi_temp_path tmp/fastcgi;\n"
		"    uwsgi_temp_path tmp/uwsgi;\n"
		"    scgi_temp_path tmp/scgi;\n"
		"    proxy_http_version 1.1;\n"
		"    proxy_set_header Connection \"\";\n"
		"    proxy_set_header Host $http_host;\n"
		"    server_names_hash_bucket_size 128;\n"
		"    # the request target before '?', raw, as BPF hashes it\n"
		"    map $request_uri $mm_path {\n"
		"\t\"~^(?<mm_p>[^?]*)\" $mm_p;\n"
		"\tdefault \"\";\n"
		"    }\n",
		t->gen, o->log_path);
	ret = write_upstreams(&g);
	if (ret)
		return ret;
	for (size_t v = 0; v < t->nvhosts; v++) {
		const struct rc_vhost *vh = &t->vhosts[v];
		bool dflt = vh->kind == MM_VH_CATCHALL;

		/* one listen address: the every-listener vhosts (port 0) */
		if (vh->port)
			continue;
		have_default |= dflt;
		server_head(&g, dflt ? "_" : vh->host, dflt);
		/* Lowest precedence first: the last fitting match wins. */
		for (size_t i = vh->nentries; i-- > 0;) {
			ret = write_entry(&g, &vh->entries[i]);
			if (ret)
				return ret;
		}
		server_tail(&g);
	}
	if (!have_default) {
		server_head(&g, "_", true);
		server_tail(&g);
	}
	fputs("}\n", out);
	return ferror(out) ? refuse(&g, "writing nginx.conf failed") : 0;
}
