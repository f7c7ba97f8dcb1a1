// SPDX-License-Identifier: Apache-2.0
/*
 * The Prometheus endpoint over real HTTP (libcurl against 127.0.0.1 on an
 * ephemeral port): routes, content negotiation, readiness, errors, address
 * parsing and "address in use".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <stdlib.h>

#include "exporter/prom_server.h"
#include "selftests/unit/test.h"

struct fetch {
	long status;
	char type[128];
	char allow[64];
	char encoding[32];
	char *body;
	size_t len;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ctx)
{
	struct fetch *f = ctx;
	char *b = realloc(f->body, f->len + sz * n + 1);

	if (!b)
		return 0;
	memcpy(b + f->len, p, sz * n);
	f->len += sz * n;
	b[f->len] = 0;
	f->body = b;
	return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ctx)
{
	struct fetch *f = ctx;
	size_t len = sz * n;

	if (len > 14 && !strncasecmp(p, "Content-Type: ", 14))
		snprintf(f->type, sizeof(f->type), "%.*s", (int)(len - 16),
			 p + 14);
	if (len > 18 && !strncasecmp(p, "Content-Encoding: ", 18))
		snprintf(f->encoding, sizeof(f->encoding), "%.*s",
			 (int)(len - 20), p + 18);
	if (len > 7 && !strncasecmp(p, "Allow: ", 7))
		snprintf(f->allow, sizeof(f->allow), "%.*s", (int)(len - 9),
			 p + 7);
	return len;
}

static const char *accept_encoding;
static const char *fetch_host = "127.0.0.1";

static int fetch(int port, const char *method, const char *path,
		 const char *accept, struct fetch *f)
{
	struct curl_slist *hdr = NULL;
	char url[128], acc[256];
	CURL *c = curl_easy_init();
	CURLcode rc;

	memset(f, 0, sizeof(*f));
	if (!c)
		return -1;
	snprintf(url, sizeof(url), "http://%s:%d%s", fetch_host, port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, f);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	if (accept_encoding) /* curl then also decodes */
		curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, accept_encoding);
	if (!strcmp(method, "HEAD"))
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET"))
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (accept) {
		snprintf(acc, sizeof(acc), "Accept: %s", accept);
		hdr = curl_slist_append(hdr, acc);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	}
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &f->status);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(c);
	if (!f->body)
		f->body = calloc(1, 1);
	return rc == CURLE_OK ? 0 : -1;
}

struct agent_state {
	int ready;
	int refreshes;
	struct mstore *store;
	int gauge_id;
};

static int ready_fn(void *ctx, char *why, size_t len)
{
	struct agent_state *a = ctx;

	if (a->ready)
		return 0;
	snprintf(why, len, "route table not loaded yet");
	return 1;
}

static void before_collect(void *ctx)
{
	struct agent_state *a = ctx;

	a->refreshes++;
	mstore__lock(a->store);
	mseries__set(mstore__series(a->store, a->gauge_id, NULL, 0),
		     a->refreshes, 1);
	mstore__unlock(a->store);
}

TEST(prom_server_routes)
{
	struct mmetric_desc g = { .name = "milometer.scrapes",
				  .description = "Scrapes seen.",
				  .instrument = MI_GAUGE,
				  .is_int = true };
	static const struct mlabel res[] = { { "service.name", "milometer" } };
	struct agent_state a = { .store = mstore__new(NULL) };
	struct prom_server_opts o = {
		.listen_addr = "127.0.0.1:0",
		.store = a.store,
		.ready_fn = ready_fn,
		.before_collect = before_collect,
		.ctx = &a,
		.resource = res,
		.nresource = 1,
	};
	struct prom_server *srv;
	struct fetch f;
	char err[256];
	int port;

	a.gauge_id = mstore__add_metric(a.store, &g);
	srv = prom_server__start(&o, err, sizeof(err));
	ASSERT_TRUE(srv, "%s", err);
	port = prom_server__port(srv);
	ASSERT_TRUE(port > 0);

	ASSERT_EQ(fetch(port, "GET", "/metrics", NULL, &f), 0);
	ASSERT_EQ(f.status, 200);
	ASSERT_STREQ(f.type, "text/plain; version=0.0.4; charset=utf-8");
	ASSERT_STREQ(f.body, "# HELP target_info Target metadata\n"
			     "# TYPE target_info gauge\n"
			     "target_info{service_name=\"milometer\"} 1\n"
			     "# HELP milometer_scrapes Scrapes seen.\n"
			     "# TYPE milometer_scrapes gauge\n"
			     "milometer_scrapes 1\n");
	free(f.body);

	ASSERT_EQ(fetch(port, "GET", "/metrics",
			"application/openmetrics-text;version=1.0.0,"
			"text/plain;version=0.0.4;q=0.5",
			&f),
		  0);
	ASSERT_EQ(f.status, 200);
	ASSERT_STREQ(
		f.type,
		"application/openmetrics-text; version=1.0.0; charset=utf-8");
	ASSERT_TRUE(strstr(f.body, "milometer_scrapes 2\n# EOF\n"), "%s",
		    f.body);
	free(f.body);

	accept_encoding = "gzip";
	ASSERT_EQ(fetch(port, "GET", "/metrics", NULL, &f), 0);
	accept_encoding = NULL;
	ASSERT_EQ(f.status, 200);
	ASSERT_STREQ(f.encoding, "gzip");
	ASSERT_TRUE(strstr(f.body, "# TYPE milometer_scrapes gauge\n"
				   "milometer_scrapes 3\n"),
		    "%s", f.body);
	free(f.body);

	ASSERT_EQ(fetch(port, "HEAD", "/metrics", NULL, &f), 0);
	ASSERT_EQ(f.status, 200);
	ASSERT_EQ(f.len, 0);
	free(f.body);

	ASSERT_EQ(fetch(port, "GET", "/healthz", NULL, &f), 0);
	ASSERT_EQ(f.status, 200);
	ASSERT_STREQ(f.body, "ok\n");
	free(f.body);

	ASSERT_EQ(fetch(port, "GET", "/readyz", NULL, &f), 0);
	ASSERT_EQ(f.status, 503);
	ASSERT_STREQ(f.body, "route table not loaded yet\n");
	free(f.body);
	a.ready = 1;
	ASSERT_EQ(fetch(port, "GET", "/readyz", NULL, &f), 0);
	ASSERT_EQ(f.status, 200);
	free(f.body);

	ASSERT_EQ(fetch(port, "GET", "/nope", NULL, &f), 0);
	ASSERT_EQ(f.status, 404);
	free(f.body);
	ASSERT_EQ(fetch(port, "POST", "/metrics", NULL, &f), 0);
	ASSERT_EQ(f.status, 405);
	ASSERT_STREQ(f.allow, "GET, HEAD");
	free(f.body);

	ASSERT_EQ(a.refreshes, 4); /* GET x3, HEAD of /metrics */
	prom_server__stop(srv);
	mstore__free(a.store);
}

TEST(prom_server_address_errors)
{
	struct mstore *st = mstore__new(NULL);
	struct prom_server_opts o = { .listen_addr = "127.0.0.1:0",
				      .store = st };
	static const char *bad[] = { "",           "9464",
				     "127.0.0.1",  "[::1:9464",
				     "::1:9464",   "127.0.0.1:70000",
				     "127.0.0.1:x" };
	struct prom_server *a, *b;
	struct fetch f;
	char err[256], addr[64];
	size_t i;
	int port;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.listen_addr = bad[i];
		err[0] = 0;
		ASSERT_TRUE(!prom_server__start(&o, err, sizeof(err)),
			    "accepted \"%s\"", bad[i]);
		ASSERT_TRUE(err[0], "no message for \"%s\"", bad[i]);
		test_log("\"%s\": %s\n", bad[i], err);
	}
	o.listen_addr = "127.0.0.1:0";
	a = prom_server__start(&o, err, sizeof(err));
	ASSERT_TRUE(a, "%s", err);
	port = prom_server__port(a);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	o.listen_addr = addr;
	b = prom_server__start(&o, err, sizeof(err));
	ASSERT_TRUE(!b);
	ASSERT_TRUE(strstr(err, "already in use"), "%s", err);
	/* stop releases the port: the same address binds again */
	prom_server__stop(a);
	b = prom_server__start(&o, err, sizeof(err));
	ASSERT_TRUE(b, "%s", err);
	prom_server__stop(b);

	/* all interfaces: dual-stack, so IPv4 loopback reaches it */
	o.listen_addr = ":0";
	b = prom_server__start(&o, err, sizeof(err));
	ASSERT_TRUE(b, "%s", err);
	ASSERT_EQ(fetch(prom_server__port(b), "GET", "/healthz", NULL, &f), 0);
	free(f.body);
	ASSERT_EQ(f.status, 200);
	prom_server__stop(b);
	o.listen_addr = "localhost:0";
	b = prom_server__start(&o, err, sizeof(err));
	ASSERT_TRUE(b, "%s", err);
	prom_server__stop(b);
	o.listen_addr = "[::1]:0";
	b = prom_server__start(&o, err, sizeof(err));
	if (b) {
		fetch_host = "[::1]";
		ASSERT_EQ(fetch(prom_server__port(b), "GET", "/healthz", NULL,
				&f),
			  0);
		fetch_host = "127.0.0.1";
		free(f.body);
		ASSERT_EQ(f.status, 200);
	} else {
		test_log("[::1]: %s (no IPv6 loopback here)\n", err);
	}
	prom_server__stop(b);
	mstore__free(st);
}

/* Send raw bytes on a fresh connection; the status line's code, or -1. */
static int raw_request(int port, const char *req, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 10 };
	char buf[256];
	int fd, code = -1;
	ssize_t n, off = 0;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		goto out;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	/* the server may answer and close before the whole head is sent */
	while ((size_t)off < len) {
		n = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		off += n;
	}
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	if (n > 12) {
		buf[n] = 0;
		sscanf(buf, "HTTP/1.%*d %d", &code);
	}
out:
	if (fd >= 0)
		close(fd);
	return code;
}

/*
 * bounded request sizes, malformed requests answered with an
 * error, and a client that never finishes its request holds nothing up.
 */
TEST(prom_server_hostile_requests)
{
	struct agent_state a = { .ready = 1, .store = mstore__new(NULL) };
	struct prom_server_opts o = { .listen_addr = "127.0.0.1:0",
				      .store = a.store,
				      .ready_fn = ready_fn,
				      .ctx = &a };
	/* past our limit, under libmicrohttpd's default of 32 KiB */
	size_t big = PROM_MAX_REQUEST + 8192;
	char err[256], *req = malloc(big + 64);
	struct prom_server *srv;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct fetch f;
	int port, code, slow[4];
	size_t len;

	ASSERT_TRUE(req && a.store);
	srv = prom_server__start(&o, err, sizeof(err));
	ASSERT_TRUE(srv, "%s", err);
	port = prom_server__port(srv);

	/* a header far past the limit: an error status, not a buffer */
	strcpy(req, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ");
	len = strlen(req);
	memset(req + len, 'a', big);
	strcpy(req + len + big, "\r\n\r\n");
	code = raw_request(port, req, strlen(req));
	ASSERT_TRUE(code == 431 || code == 413 || code == 400,
		    "oversized head answered %d", code);
	/* not HTTP at all */
	code = raw_request(port, "\x01\x02\x03 garbage\r\n\r\n", 15);
	ASSERT_EQ(code, 400);
	code = raw_request(port, "GET /metrics HTTP/9.9\r\n\r\n", 25);
	ASSERT_TRUE(code >= 400, "answered %d", code);

	/* clients that connect and never finish their request */
	sa.sin_port = htons(port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int i = 0; i < 4; i++) {
		slow[i] = socket(AF_INET, SOCK_STREAM, 0);
		ASSERT_TRUE(
			slow[i] >= 0 &&
			!connect(slow[i], (struct sockaddr *)&sa, sizeof(sa)));
		ASSERT_TRUE(send(slow[i], "GET /met", 8, 0) == 8);
	}
	ASSERT_EQ(fetch(port, "GET", "/healthz", NULL, &f), 0);
	ASSERT_EQ(f.status, 200);
	free(f.body);
	for (int i = 0; i < 4; i++)
		close(slow[i]);
	prom_server__stop(srv);
	mstore__free(a.store);
	free(req);
}

static int write_page(void *ctx, FILE *out)
{
	int *calls = ctx;

	fprintf(out, "{\"calls\":%d}", ++*calls);
	return *calls > 1 ? -EIO : 0;
}

/* Pages beside /metrics: a static body, one written per request, its failure. */
TEST(prom_server_pages)
{
	static const char html[] = "<html>ui</html>";
	int calls = 0;
	const struct prom_page pages[] = {
		{ .path = "/ui",
		  .content_type = "text/html; charset=utf-8",
		  .body = html,
		  .len = sizeof(html) - 1 },
		{ .path = "/ui/top.json",
		  .content_type = "application/json",
		  .write = write_page,
		  .ctx = &calls },
	};
	struct prom_server_opts o = {
		.listen_addr = "127.0.0.1:0",
		.store = mstore__new(NULL),
		.pages = pages,
		.npages = 2,
	};
	char err[256];
	struct prom_server *srv = prom_server__start(&o, err, sizeof(err));
	struct fetch f;
	int port;

	if (!ASSERT_TRUE(srv, "%s", err))
		return;
	port = prom_server__port(srv);
	ASSERT_EQ(fetch(port, "GET", "/ui", NULL, &f), 0);
	ASSERT_EQ(f.status, 200);
	ASSERT_STREQ(f.body, html);
	ASSERT_STREQ(f.type, "text/html; charset=utf-8");
	free(f.body);
	ASSERT_EQ(fetch(port, "GET", "/ui/top.json", NULL, &f), 0);
	ASSERT_EQ(f.status, 200);
	ASSERT_STREQ(f.body, "{\"calls\":1}");
	ASSERT_STREQ(f.type, "application/json");
	free(f.body);
	ASSERT_EQ(fetch(port, "GET", "/ui/top.json", NULL, &f), 0);
	ASSERT_EQ(f.status, 500);
	free(f.body);
	ASSERT_EQ(fetch(port, "POST", "/ui", NULL, &f), 0);
	ASSERT_EQ(f.status, 405);
	free(f.body);
	ASSERT_EQ(fetch(port, "GET", "/ui/", NULL, &f), 0);
	ASSERT_EQ(f.status, 404);
	free(f.body);
	prom_server__stop(srv);
	mstore__free(o.store);
}
