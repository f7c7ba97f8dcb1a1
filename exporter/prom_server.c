// SPDX-License-Identifier: Apache-2.0
/* Prometheus HTTP endpoint: see prom_server.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "exporter/prom_server.h"
#include "exporter/prom_text.h"

struct prom_server {
	struct prom_server_opts opts;
	struct MHD_Daemon *daemon;
	int fd;
	int port;
};

/* Split "host:port", "[v6]:port" or ":port"; host "" means any. */
static int parse_listen(const char *addr, char *host, size_t hlen, char *port,
			size_t plen, char *err, size_t errlen)
{
	const char *colon, *h = addr;
	size_t n;
	char *end;
	long p;

	if (!addr || !addr[0]) {
		snprintf(err, errlen,
			 "empty listen address: use HOST:PORT, "
			 "e.g. 127.0.0.1:9464, [::1]:9464 or :9464");
		return -EINVAL;
	}
	if (addr[0] == '[') {
		const char *rb = strchr(addr, ']');

		if (!rb || rb[1] != ':') {
			snprintf(err, errlen,
				 "listen address \"%s\": an IPv6 "
				 "address is written [ADDR]:PORT",
				 addr);
			return -EINVAL;
		}
		h = addr + 1;
		n = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon || memchr(addr, ':', (size_t)(colon - addr))) {
			snprintf(err, errlen,
				 "listen address \"%s\": use "
				 "HOST:PORT (IPv6 as [ADDR]:PORT, all "
				 "interfaces as :PORT)",
				 addr);
			return -EINVAL;
		}
		n = (size_t)(colon - addr);
	}
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || p < 0 || p > 65535) {
		snprintf(err, errlen,
			 "listen address \"%s\": the port must "
			 "be a number from 0 to 65535",
			 addr);
		return -EINVAL;
	}
	if (n >= hlen) {
		snprintf(err, errlen, "listen address \"%s\": host too long",
			 addr);
		return -EINVAL;
	}
	memcpy(host, h, n);
	host[n] = 0;
	snprintf(port, plen, "%ld", p);
	return 0;
}

static int bind_one(const struct sockaddr *sa, socklen_t salen, bool dual,
		    const char *addr, char *err, size_t errlen)
{
	int fd, one = 1, zero = 0, e;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (dual)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, sa, salen) || listen(fd, 64)) {
		e = errno;
		close(fd);
		if (e == EADDRINUSE)
			snprintf(
				err, errlen,
				"listen address %s is already in "
				"use: stop the other process or choose another "
				"port",
				addr);
		else if (e == EADDRNOTAVAIL)
			snprintf(err, errlen,
				 "listen address %s is not an "
				 "address of this host",
				 addr);
		else if (e == EACCES)
			snprintf(err, errlen,
				 "listen address %s: ports below "
				 "1024 need CAP_NET_BIND_SERVICE",
				 addr);
		else
			snprintf(err, errlen, "listen address %s: %s", addr,
				 strerror(e));
		return -e;
	}
	return fd;
}

static int open_listener(const char *addr, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	char host[256], port[8];
	struct addrinfo *res = NULL;
	int fd, rc;

	rc = parse_listen(addr, host, sizeof(host), port, sizeof(port), err,
			  errlen);
	if (rc)
		return rc;
	if (!host[0]) {
		struct sockaddr_in6 any6 = { .sin6_family = AF_INET6,
					     .sin6_addr = IN6ADDR_ANY_INIT,
					     .sin6_port = htons(atoi(port)) };
		struct sockaddr_in any4 = { .sin_family = AF_INET,
					    .sin_addr.s_addr = INADDR_ANY,
					    .sin_port = htons(atoi(port)) };

		fd = bind_one((struct sockaddr *)&any6, sizeof(any6), true,
			      addr, err, errlen);
		/* hosts booted with ipv6.disable=1 */
		if (fd == -EAFNOSUPPORT)
			fd = bind_one((struct sockaddr *)&any4, sizeof(any4),
				      false, addr, err, errlen);
		return fd;
	}
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc) {
		snprintf(err, errlen,
			 "listen address %s: cannot resolve "
			 "\"%s\": %s",
			 addr, host, gai_strerror(rc));
		return -EINVAL;
	}
	fd = bind_one(res->ai_addr, res->ai_addrlen, false, addr, err, errlen);
	freeaddrinfo(res);
	return fd;
}

/* Does the client take gzip (Accept-Encoding lists it without q=0)? */
static bool wants_gzip(struct MHD_Connection *c)
{
	const char *ae = MHD_lookup_connection_value(
		c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
	const char *p = ae ? strcasestr(ae, "gzip") : NULL;
	const char *q;

	if (!p)
		return false;
	q = strpbrk(p, ",;");
	if (q && *q == ';') {
		while (*++q == ' ')
			;
		if (!strncmp(q, "q=", 2) && strtod(q + 2, NULL) <= 0)
			return false;
	}
	return true;
}

/*
 * gzip at level 1: the text compresses ~20x at a fraction of the cost of
 * higher levels, and scrapes are latency-sensitive. Returns the compressed
 * buffer (malloc'd) or NULL, in which case the caller sends plain text.
 */
static char *gzip_body(const char *in, size_t len, size_t *out_len)
{
	z_stream z = { 0 };
	size_t cap;
	char *out;

	if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return NULL;
	cap = deflateBound(&z, len);
	out = malloc(cap);
	if (!out) {
		deflateEnd(&z);
		return NULL;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)out;
	z.avail_out = (uInt)cap;
	if (len > UINT32_MAX || deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(out);
		return NULL;
	}
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status,
			     const char *type, char *body, size_t len,
			     bool owned)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body,
					    owned ? MHD_RESPMEM_MUST_FREE
						  : MHD_RESPMEM_PERSISTENT);
	if (!r) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned int status,
				  const char *msg)
{
	return reply(c, status, "text/plain; charset=utf-8", (char *)msg,
		     strlen(msg), false);
}

static enum MHD_Result deny(struct MHD_Connection *c, int status,
			    const char *msg)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	char *body;

	if (asprintf(&body, "%s\n", msg[0] ? msg : "forbidden") < 0)
		return MHD_NO;
	r = MHD_create_response_from_buffer(strlen(body), body,
					    MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; charset=utf-8");
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"milometer\"");
	ret = MHD_queue_response(c, (unsigned int)status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result serve_page(struct MHD_Connection *c,
				  const struct prom_page *pg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	if (!pg->write)
		return reply(c, MHD_HTTP_OK, pg->content_type, (char *)pg->body,
			     pg->len, false);
	f = open_memstream(&buf, &len);
	if (!f)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "out of memory\n");
	err = pg->write(pg->ctx, f);
	if (fclose(f) || err) {
		free(buf);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "rendering the page failed\n");
	}
	return reply(c, MHD_HTTP_OK, pg->content_type, buf, len, true);
}

/*
 * /metrics, or one of opts.pages: one entry point, so that whatever checks
 * a reader of /metrics checks a reader of the pages too.
 */
static enum MHD_Result serve_metrics(struct prom_server *srv,
				     struct MHD_Connection *c,
				     const struct prom_page *page)
{
	const char *accept = MHD_lookup_connection_value(
		c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	enum prom_format fmt = prom_text__negotiate(accept);
	const struct prom_auth *auth = srv->opts.auth;
	struct timespec ts;
	void *access = NULL;
	char *buf = NULL;
	size_t len = 0, kept = 0;
	FILE *f;
	int err;

	if (auth) {
		char msg[512] = "";
		int st = auth->begin(auth->ctx, srv->opts.store,
				     MHD_lookup_connection_value(
					     c, MHD_HEADER_KIND,
					     MHD_HTTP_HEADER_AUTHORIZATION),
				     &access, msg, sizeof(msg));

		if (st != MHD_HTTP_OK) {
			msg[sizeof(msg) - 1] = 0;
			return deny(c, st, msg);
		}
	}
	/*
	 * Past any check of the reader above. The pages' views are not
	 * filtered per reader: one allowed only part of /metrics gets none
	 * of them.
	 */
	if (page && access) {
		auth->end(access);
		return deny(c, MHD_HTTP_FORBIDDEN,
			    "forbidden: this page shows every tenant's series; "
			    "it needs get on the non-resource URL /metrics");
	}
	if (page)
		return serve_page(c, page);
	if (srv->opts.before_collect)
		srv->opts.before_collect(srv->opts.ctx);
	clock_gettime(CLOCK_REALTIME, &ts);
	f = open_memstream(&buf, &len);
	if (!f) {
		if (access)
			auth->end(access);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "out of memory\n");
	}
	/* the agent's own identity is not a tenant's to read */
	err = access ? 0
		     : prom_text__write_target_info(f, srv->opts.resource,
						    srv->opts.nresource, fmt);
	if (!err) {
		struct mlabel consts[8];
		char cbuf[1024];
		size_t nconsts = 0;

		if (srv->opts.const_labels_fn)
			nconsts = srv->opts.const_labels_fn(
				srv->opts.ctx, consts, 8, cbuf, sizeof(cbuf));
		err = prom_text__write_filtered(
			f, srv->opts.store, fmt,
			(uint64_t)ts.tv_sec * 1000000000ull +
				(uint64_t)ts.tv_nsec,
			consts, nconsts, access ? auth->keep : NULL, access,
			&kept);
	}
	if (access)
		auth->end(access);
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (err) {
		free(buf);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "collecting metrics failed\n");
	}
	if (access && !kept) {
		free(buf);
		return deny(c, MHD_HTTP_FORBIDDEN,
			    "forbidden: you may get none of the objects these "
			    "metrics are about, nor the non-resource URL "
			    "/metrics");
	}
	if (wants_gzip(c)) {
		struct MHD_Response *r;
		enum MHD_Result ret;
		size_t zlen;
		char *z = gzip_body(buf, len, &zlen);

		if (z) {
			free(buf);
			r = MHD_create_response_from_buffer(
				zlen, z, MHD_RESPMEM_MUST_FREE);
			if (!r) {
				free(z);
				return MHD_NO;
			}
			MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
						prom_text__content_type(fmt));
			MHD_add_response_header(
				r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
			MHD_add_response_header(r, MHD_HTTP_HEADER_VARY,
						"Accept-Encoding");
			ret = MHD_queue_response(c, MHD_HTTP_OK, r);
			MHD_destroy_response(r);
			return ret;
		}
	}
	return reply(c, MHD_HTTP_OK, prom_text__content_type(fmt), buf, len,
		     true);
}

static enum MHD_Result serve_ready(struct prom_server *srv,
				   struct MHD_Connection *c)
{
	char why[256] = "", *body;

	if (!srv->opts.ready_fn ||
	    !srv->opts.ready_fn(srv->opts.ctx, why, sizeof(why)))
		return reply_text(c, MHD_HTTP_OK, "ok\n");
	why[sizeof(why) - 1] = 0;
	if (asprintf(&body, "%s\n", why[0] ? why : "not ready") < 0)
		return MHD_NO;
	return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE,
		     "text/plain; charset=utf-8", body, strlen(body), true);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload_data,
			      size_t *upload_data_size, void **req_cls)
{
	struct prom_server *srv = cls;

	if (strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "method not allowed: use GET\n");
	/* libmicrohttpd leaves the body out of HEAD responses itself */
	if (!strcmp(url, "/metrics"))
		return serve_metrics(srv, c, NULL);
	for (size_t i = 0; i < srv->opts.npages; i++)
		if (!strcmp(url, srv->opts.pages[i].path))
			return serve_metrics(srv, c, &srv->opts.pages[i]);
	if (!strcmp(url, "/healthz"))
		return reply_text(c, MHD_HTTP_OK, "ok\n");
	if (!strcmp(url, "/readyz"))
		return serve_ready(srv, c);
	return reply_text(c, MHD_HTTP_NOT_FOUND,
			  "not found: try /metrics, /healthz or /readyz\n");
}

struct prom_server *prom_server__start(const struct prom_server_opts *opts,
				       char *err, size_t errlen)
{
	struct prom_server *srv;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (!opts->store) {
		snprintf(err, errlen, "prometheus server needs a metric store");
		return NULL;
	}
	srv = calloc(1, sizeof(*srv));
	if (!srv) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	srv->opts = *opts;
	srv->fd = open_listener(opts->listen_addr, err, errlen);
	if (srv->fd < 0)
		goto fail;
	if (!getsockname(srv->fd, (struct sockaddr *)&ss, &sl))
		srv->port =
			ntohs(ss.ss_family == AF_INET6
				      ? ((struct sockaddr_in6 *)&ss)->sin6_port
				      : ((struct sockaddr_in *)&ss)->sin_port);
	srv->daemon = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL,
		handle, srv, MHD_OPTION_LISTEN_SOCKET, srv->fd,
		/* a stuck client must not hold the single thread forever */
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned int)64,
		/* one client cannot take every slot */
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)16,
		/*
		 * Request line plus headers per connection: a scrape needs
		 * well under 1 KiB; past this libmicrohttpd answers 431 (or
		 * 414 for the URI) and closes, never buffering more.
		 */
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)PROM_MAX_REQUEST,
		MHD_OPTION_END);
	if (!srv->daemon) {
		snprintf(err, errlen,
			 "listen address %s: libmicrohttpd "
			 "failed to start",
			 opts->listen_addr);
		close(srv->fd);
		goto fail;
	}
	return srv;
fail:
	free(srv);
	return NULL;
}

int prom_server__port(const struct prom_server *srv)
{
	return srv->port;
}

void prom_server__stop(struct prom_server *srv)
{
	if (!srv)
		return;
	/* MHD_stop_daemon closes the listen socket it was given */
	MHD_stop_daemon(srv->daemon);
	free(srv);
}
