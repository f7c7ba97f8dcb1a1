// SPDX-License-Identifier: Apache-2.0
/*
 * The nginx.conf generator against a real nginx: every request is sent to
 * nginx running the generated config, and the route nginx logs must be
 * the one route_match__lookup() gives for the same request head (which
 * test_route_precedence.c pins to the Gateway API answers). Skipped, with
 * a log line, when no nginx binary is installed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "policy/gateway/gateway_api.h"
#include "policy/gateway/route_compile.h"
#include "policy/gateway/route_match.h"
#include "selftests/tools/lib/route_nginx.h"
#include "selftests/unit/test.h"
#include "selftests/unit/test_route_data.h"

#define NGINX          "/usr/sbin/nginx"
#define PRECEDENCE_DIR route_testdata()

/* Request heads: Host, method, target, extra headers. */
static const char *const heads[] = {
	"GET /login HTTP/1.1\r\nHost: www.example.com\r\n",
	"GET /login/ HTTP/1.1\r\nHost: WWW.Example.COM:8080\r\n",
	"GET /login?next=/ HTTP/1.1\r\nHost: www.example.com.\r\n",
	"GET /x HTTP/1.1\r\nHost: foo.example.com\r\n",
	"GET / HTTP/1.1\r\nHost: a.b.example.com\r\n",
	"GET / HTTP/1.1\r\nHost: x.eu.example.com\r\n",
	"GET / HTTP/1.1\r\nHost: eu.example.com\r\n",
	"GET /healthz HTTP/1.1\r\nHost: example.com\r\n",
	"GET /other HTTP/1.1\r\nHost: api.example.com\r\n",
	"GET /v1/a HTTP/1.1\r\nHost: api.example.com\r\n",
	"GET /foo HTTP/1.1\r\nHost: unknown.org\r\n",
	"GET /other HTTP/1.1\r\nHost: same.test\r\n",
	"GET / HTTP/1.1\r\nHost: sel.test\r\n",
	"GET /a HTTP/1.1\r\nHost: secure.test\r\n",
	"GET /api/v2 HTTP/1.1\r\nHost: www.example.com\r\n",
	"GET /api/v2/users HTTP/1.1\r\nHost: www.example.com\r\n",
	"POST /api/v2x HTTP/1.1\r\nHost: www.example.com\r\n"
	"Content-Length: 0\r\n",
	"GET /apix HTTP/1.1\r\nHost: www.example.com\r\n",
	"GET /Api/x HTTP/1.1\r\nHost: www.example.com\r\n",
	"POST /api/x HTTP/1.1\r\nHost: www.example.com\r\nX-Canary: true\r\n"
	"X-Env: prod\r\nContent-Length: 0\r\n",
	"GET /api/x HTTP/1.1\r\nHost: www.example.com\r\nx-env: prod\r\n"
	"x-canary: true\r\n",
	"GET /api HTTP/1.1\r\nHost: www.example.com\r\nX-CANARY: true\r\n",
	"GET /api HTTP/1.1\r\nHost: www.example.com\r\nX-Canary: TRUE\r\n",
	"GET /api/q?debug=1 HTTP/1.1\r\nHost: www.example.com\r\n"
	"X-Canary: true\r\n",
	"GET /api/q?a=2&debug=1 HTTP/1.1\r\nHost: www.example.com\r\n",
	"GET /api/q?DEBUG=1 HTTP/1.1\r\nHost: www.example.com\r\n",
	"GET /api/q?debug=2&debug=1 HTTP/1.1\r\nHost: www.example.com\r\n",
	"GET /api/re HTTP/1.1\r\nHost: www.example.com\r\nX-Ver: v12\r\n",
	"GET /api/re HTTP/1.1\r\nHost: www.example.com\r\nX-Ver: v12b\r\n",
	"GET /shared/a HTTP/1.1\r\nHost: www.example.com\r\n",
	"GET /tie HTTP/1.1\r\nHost: www.example.com\r\n",
	"GET /notime HTTP/1.1\r\nHost: www.example.com\r\n",
	"GET /dup/x HTTP/1.1\r\nHost: www.example.com\r\n",
	"GET /items/special HTTP/1.1\r\nHost: re.example.com\r\n",
	"GET /items/42 HTTP/1.1\r\nHost: re.example.com\r\n",
	"GET /items/42/detail HTTP/1.1\r\nHost: re.example.com\r\n",
	"GET /items/42x HTTP/1.1\r\nHost: re.example.com\r\n",
	"GET /itemsx HTTP/1.1\r\nHost: re.example.com\r\n",
	"OPTIONS /m HTTP/1.1\r\nHost: many.test\r\n",
	"PATCH /m/x HTTP/1.1\r\nHost: many.test\r\nContent-Length: 0\r\n",
	"DELETE /m HTTP/1.1\r\nHost: many.test\r\n",
	"POST /x HTTP/1.1\r\nHost: many.test\r\nContent-Length: 0\r\n",
	"GET /x HTTP/1.1\r\nHost: many.test\r\n",
	"GET /1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17 HTTP/1.1\r\n"
	"Host: deep.test\r\n",
	"GET /a HTTP/1.1\r\nHost: deep.test\r\n",
};

#define NHEADS (sizeof(heads) / sizeof(heads[0]))

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static int connect_to(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Send one request with Connection: close and read until nginx closes. */
static int exchange(int port, const char *head)
{
	char buf[4096];
	int fd = connect_to(port);
	ssize_t n;

	if (fd < 0)
		return -errno;
	snprintf(buf, sizeof(buf), "%sConnection: close\r\n\r\n", head);
	if (write(fd, buf, strlen(buf)) != (ssize_t)strlen(buf)) {
		close(fd);
		return -EIO;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	close(fd);
	return n < 0 ? -errno : 0;
}

static size_t count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;
	int c;

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/*
 * Runs a copy named mm-ut-nginx: agents and demos on the machine that
 * trace processes named "nginx" must not count the test's requests.
 */
static int copy_nginx(const char *dst)
{
	char buf[65536];
	int in = open(NGINX, O_RDONLY), out, ret = 0;
	ssize_t n;

	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (out < 0) {
		ret = -errno;
		close(in);
		return ret;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			ret = -EIO;
			break;
		}
	if (n < 0)
		ret = -errno;
	close(in);
	if (close(out) && !ret)
		ret = -errno;
	return ret;
}

static pid_t start_nginx(const char *dir, const char *conf)
{
	char elog[512], exe[512];
	pid_t pid;

	snprintf(elog, sizeof(elog), "%s/error.log", dir);
	snprintf(exe, sizeof(exe), "%s/mm-ut-nginx", dir);
	if (copy_nginx(exe))
		return -1;
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(null, 1);
		execl(exe, "mm-ut-nginx", "-p", dir, "-e", elog, "-c", conf,
		      "-g", "daemon off; master_process off;", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void answer(const struct route_table *t, const char *head, char *buf,
		   size_t len)
{
	struct route_result res;
	struct http_req req;
	char full[1024];
	int n = snprintf(full, sizeof(full), "%s\r\n", head);

	if (route_match__parse_head(full, (size_t)n, &req) ||
	    route_match__lookup(t, 0, 0, &req, &res)) {
		snprintf(buf, len, "(lookup failed)");
		return;
	}
	if (res.route_id == MM_ROUTE_UNMATCHED)
		snprintf(buf, len, "unmatched");
	else
		snprintf(buf, len, "%s/%s rule %u", t->routes[res.route_id].ns,
			 t->routes[res.route_id].name, res.rule_idx);
}

TEST(route_nginx_matches_explain)
{
	static const struct route_nginx_upstream ups[] = {
		{ "login", "127.0.0.1:1" },
		{ "apps/web", "127.0.0.1:1" },
		{ "wild", "127.0.0.1:1" },
	};
	struct route_nginx_opts o = { .upstreams = ups, .nupstreams = 3 };
	char conf[512], logp[512], listen[64], tmp[512], err[512];
	char line[2048];
	const char *dir = test__tmpdir();
	struct route_table *t = NULL;
	struct gw_model *m = gateway_api__new();
	size_t i = 0, bad = 0;
	pid_t pid = -1;
	int port, fd = -1, ret;
	FILE *f;

	if (access(NGINX, X_OK)) {
		test_log("SKIP: %s not installed\n", NGINX);
		gateway_api__free(m);
		return;
	}
	ASSERT_EQ(gateway_api__load_dir(m, PRECEDENCE_DIR, err, sizeof(err)),
		  0);
	ASSERT_EQ(route_compile__build(m, "infra/gw", 3, &t, err, sizeof(err)),
		  0);
	port = free_port();
	ASSERT_TRUE(port > 0);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	snprintf(conf, sizeof(conf), "%s/nginx.conf", dir);
	snprintf(logp, sizeof(logp), "%s/access.log", dir);
	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	mkdir(tmp, 0700);
	o.listen = listen;
	o.log_path = logp;
	f = fopen(conf, "w");
	ASSERT_TRUE(f != NULL);
	ret = route_nginx__write(t, &o, f, err, sizeof(err));
	fclose(f);
	ASSERT_EQ(ret, 0);

	pid = start_nginx(dir, conf);
	if (!ASSERT_TRUE(pid > 0))
		return; /* never kill(-1) below */
	for (int tries = 0; tries < 500 && fd < 0; tries++) {
		fd = connect_to(port);
		if (fd < 0) {
			if (waitpid(pid, NULL, WNOHANG) == pid) {
				pid = -1;
				break;
			}
			sleep_ms(10);
		}
	}
	if (fd < 0) {
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		snprintf(tmp, sizeof(tmp), "cat %s/error.log >&2", dir);
		ret = system(tmp);
		ASSERT_TRUE(false, "nginx did not start (config %s)", conf);
		return;
	}
	close(fd);
	for (i = 0; i < NHEADS; i++) {
		ret = exchange(port, heads[i]);
		if (ret)
			break;
	}
	for (int tries = 0; tries < 500 && count_lines(logp) < NHEADS; tries++)
		sleep_ms(10);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	ASSERT_EQ(ret, 0);
	ASSERT_EQ(count_lines(logp), NHEADS);

	f = fopen(logp, "r");
	ASSERT_TRUE(f != NULL);
	for (i = 0; i < NHEADS && fgets(line, sizeof(line), f); i++) {
		char want[256], *tab = strchr(line, '\t');

		if (tab)
			*tab = '\0';
		answer(t, heads[i], want, sizeof(want));
		if (strcmp(line, want)) {
			bad++;
			test__fail(__FILE__, __LINE__,
				   "nginx logged \"%s\", explain says \"%s\" "
				   "for:\n%s",
				   line, want, heads[i]);
		}
	}
	fclose(f);
	test_log("%zu requests: nginx route == explain route\n", i);
	ASSERT_EQ(i, NHEADS);
	ASSERT_EQ(bad, 0);
	route_compile__free(t);
	gateway_api__free(m);
}

TEST(route_nginx_missing_upstream)
{
	struct route_nginx_opts o = { .listen = "127.0.0.1:1",
				      .log_path = "/dev/null" };
	struct gw_model *m = gateway_api__new();
	struct route_table *t = NULL;
	char err[512], *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	int ret;

	ASSERT_EQ(gateway_api__load_dir(m, PRECEDENCE_DIR, err, sizeof(err)),
		  0);
	ASSERT_EQ(route_compile__build(m, "infra/gw", 3, &t, err, sizeof(err)),
		  0);
	ret = route_nginx__write(t, &o, f, err, sizeof(err));
	fclose(f);
	free(buf);
	ASSERT_EQ(ret, -EINVAL);
	ASSERT_TRUE(strstr(err, "give --upstream login=HOST:PORT") != NULL,
		    "%s", err);
	route_compile__free(t);
	gateway_api__free(m);
}
