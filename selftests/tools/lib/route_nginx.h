/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nginx.conf from a compiled route table, for tests that need a real proxy
 * routing like the HTTPRoutes (selftests/tools/gen_nginx.c is the CLI).
 *
 * The route order is not re-derived: each virtual host's precedence list
 * (struct rc_vhost entries) becomes a chain of server-level `if`s, lowest
 * precedence first, so the last match that fits is the Gateway API answer.
 * One server block per vhost (server_name exact / "*.suffix"; the catch-all
 * vhost, or a 404 server, is default_server), conditions on the raw path
 * (request target before '?', as BPF hashes it), $request_method,
 * $http_NAME and $args. Every request is logged tab-separated:
 *
 *   route  status  request_time  upstream_response_time  upstream_status
 *   method  host  request_uri
 *
 * with route "NS/NAME rule N" or "unmatched" (nginx answers 404 as Envoy
 * does; 500 for a rule without backends).
 *
 * Subset (anything else fails with a message): header names of
 * [A-Za-z0-9-]; header/query values and Exact paths without '$'; query
 * RegularExpression values that cannot match '&'. Regexes are handed to
 * PCRE, which reads the POSIX ERE subset we accept the same way. Absent
 * headers compare as "" (an Exact match on "" would match them).
 *
 * Run it as: nginx -p DIR -e DIR/error.log -c DIR/nginx.conf
 * (pid and temp paths are relative to the -p prefix).
 */
#ifndef MM_POLICY_ROUTE_NGINX_H
#define MM_POLICY_ROUTE_NGINX_H

#include <stdio.h>

#include "policy/gateway/route_compile.h"

struct route_nginx_upstream {
	const char *name; /* "NS/NAME" or "NAME" of a backendRef Service */
	const char *addr; /* "HOST:PORT" */
};

struct route_nginx_opts {
	const char *listen;   /* "127.0.0.1:8080" */
	const char *log_path; /* access log */
	const struct route_nginx_upstream *upstreams;
	size_t nupstreams;
};

int route_nginx__write(const struct route_table *t,
		       const struct route_nginx_opts *o, FILE *out, char *err,
		       size_t errlen);

#endif /* MM_POLICY_ROUTE_NGINX_H */
