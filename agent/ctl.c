// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/aggregate.h"
#include "agent/ctl.h"
#include "agent/loader.h"
#include "agent/route_sync.h"
#include "agent/self_metrics.h"
#include "agent/targets.h"
#include "exporter/metric_store.h"
#include "policy/contract/contract.h"

static int mkdir_parent(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int ctl__listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "milometer: --socket %s: path too long\n", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	err = mkdir_parent(path);
	if (err) {
		fprintf(stderr, "milometer: cannot create the directory of %s: %s\n",
			path, strerror(-err));
		return err;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(path);
	/* 0600 from the start: no window where others could connect */
	{
		mode_t old = umask(0177);

		err = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
		umask(old);
	}
	if (err || listen(fd, 16)) {
		err = -errno;
		fprintf(stderr, "milometer: cannot listen on %s: %s\n", path,
			strerror(errno));
		close(fd);
		return err;
	}
	return fd;
}

void ctl__close(int lfd, const char *path)
{
	if (lfd >= 0) {
		close(lfd);
		unlink(path);
	}
}

static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(out, "\\u%04x", *s);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

struct series_ctx {
	FILE *out;
	int json;
	int first;
};

static int dump_metric(void *ctx, const struct mmetric_desc *d,
		       const struct mpoint_view *pts, size_t n)
{
	struct series_ctx *sc = ctx;

	for (size_t i = 0; i < n; i++) {
		const struct mpoint_view *p = &pts[i];
		bool hist = d->instrument == MI_HISTOGRAM;

		if (sc->json) {
			fprintf(sc->out, "%s{\"metric\":", sc->first ? "" : ",\n");
			json_str(sc->out, d->name);
			fputs(",\"labels\":{", sc->out);
			for (size_t j = 0; j < p->nlabels; j++) {
				fputs(j ? "," : "", sc->out);
				json_str(sc->out, p->labels[j].key);
				fputc(':', sc->out);
				json_str(sc->out, p->labels[j].value);
			}
			if (hist)
				fprintf(sc->out, "},\"count\":%llu,\"sum\":%.17g}",
					(unsigned long long)p->count, p->sum);
			else
				fprintf(sc->out, "},\"value\":%.17g}",
					d->is_int ? (double)p->ivalue : p->value);
			sc->first = 0;
			continue;
		}
		fprintf(sc->out, "%s{", d->name);
		for (size_t j = 0; j < p->nlabels; j++)
			fprintf(sc->out, "%s%s=\"%s\"", j ? "," : "",
				p->labels[j].key, p->labels[j].value);
		if (hist)
			fprintf(sc->out, "} count=%llu sum=%.6g\n",
				(unsigned long long)p->count, p->sum);
		else
			fprintf(sc->out, "} %.17g\n",
				d->is_int ? (double)p->ivalue : p->value);
	}
	return 0;
}

static void cmd_status(struct agent *ag, FILE *out, int json)
{
	int att, tot;
	const char *rerr = route_sync__last_error(ag->routes);
	uint64_t up = (agent__real_ns() - ag->start_ns) / 1000000000ULL;

	loader__attached(ag->skel, &att, &tot);
	if (json) {
		fprintf(out, "{\"version\":\"%s\",\"uptime_s\":%llu,\"ready\":%s,"
			     "\"programs_attached\":%d,\"programs\":%d,\"targets\":%d,"
			     "\"route_reloads\":%llu,\"route_error\":",
			MM_VERSION, (unsigned long long)up, ag->ready ? "true" : "false",
			att, tot, targets__count(ag->skel),
			(unsigned long long)route_sync__reloads(ag->routes));
		if (rerr)
			json_str(out, rerr);
		else
			fputs("null", out);
		fprintf(out, ",\"otlp\":%s}\n", ag->otlp ? "true" : "false");
		return;
	}
	fprintf(out, "milometer %s, up %llus, %s\n", MM_VERSION,
		(unsigned long long)up, ag->ready ? "ready" : ag->not_ready);
	fprintf(out, "programs attached: %d/%d, target processes: %d\n", att,
		tot, targets__count(ag->skel));
	fprintf(out, "route tables installed: %llu%s%s\n",
		(unsigned long long)route_sync__reloads(ag->routes),
		rerr ? ", latest manifests rejected: " : "", rerr ? rerr : "");
	fprintf(out, "otlp: %s\n", ag->otlp ? "on" : "off");
}

static void run_cmd(struct agent *ag, char *line, FILE *out)
{
	int json = 0;
	char *cmd = strtok(line, " \t\r\n");

	if (cmd && !strcmp(cmd, "--json")) {
		json = 1;
		cmd = strtok(NULL, " \t\r\n");
	}
	if (!cmd || !strcmp(cmd, "status")) {
		cmd_status(ag, out, json);
	} else if (!strcmp(cmd, "targets")) {
		targets__dump(ag->skel, out, json);
	} else if (!strcmp(cmd, "routes")) {
		route_sync__dump(ag->routes, out, json);
	} else if (!strcmp(cmd, "series")) {
		struct series_ctx sc = { .out = out, .json = json, .first = 1 };

		if (json)
			fputc('[', out);
		mstore__collect(ag->store, MT_CUMULATIVE, agent__real_ns(),
				dump_metric, &sc);
		if (json)
			fputs("]\n", out);
	} else if (!strcmp(cmd, "stats")) {
		self_metrics__dump(ag->self, out, json);
	} else if (!strcmp(cmd, "policies")) {
		if (ag->contract)
			contract__render(ag->contract, out,
					 json ? CONTRACT_RENDER_JSON : 0);
		else
			fputs(json ? "[]\n" : "no MetricDefinitions or MetricPolicies loaded\n", out);
	} else {
		fprintf(out, "error: unknown command \"%s\" (status, targets, routes, series, stats, policies)\n",
			cmd);
	}
}

/*
 * One request line of at most CTL_MAX_REQUEST bytes, within CTL_READ_MS:
 * the loop that serves the socket also drains the ring buffer, so a client
 * slow to ask (or asking for too much) gets an error, not the agent's time.
 * 0, or -E2BIG / -ETIMEDOUT / -EINVAL (bytes that are not a command).
 */
#define CTL_MAX_REQUEST 256
#define CTL_READ_MS 100

static int read_request(int fd, char *line, size_t len)
{
	struct timespec t0, now;
	size_t got = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long left;
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &now);
		left = CTL_READ_MS - ((now.tv_sec - t0.tv_sec) * 1000 +
				      (now.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || poll(&p, 1, left) <= 0)
			return -ETIMEDOUT;
		n = recv(fd, line + got, len - 1 - got, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break; /* the client is done: take what it sent */
		got += n;
		line[got] = 0;
		if (memchr(line, '\n', got))
			break;
		if (got == len - 1)
			return -E2BIG;
	}
	line[got] = 0;
	if (!got)
		return -ENODATA;
	for (size_t i = 0; i < got; i++)
		if (!isprint((unsigned char)line[i]) && !isspace((unsigned char)line[i]))
			return -EINVAL;
	return 0;
}

void ctl__serve(struct agent *ag, int lfd)
{
	struct timeval tv = { .tv_sec = 1 };
	char line[CTL_MAX_REQUEST];
	FILE *out;
	int fd, err;

	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	err = read_request(fd, line, sizeof(line));
	if (err == -ENODATA) {
		close(fd);
		return;
	}
	out = fdopen(fd, "w");
	if (!out) {
		close(fd);
		return;
	}
	if (err == -E2BIG) {
		char junk[4096];

		/*
		 * Closing with unread bytes resets the connection and the
		 * client would not read the answer: drop what is already
		 * queued (without waiting for more).
		 */
		for (int i = 0; i < 16; i++)
			if (recv(fd, junk, sizeof(junk), MSG_DONTWAIT) <= 0)
				break;
		fprintf(out, "error: request longer than %d bytes\n",
			CTL_MAX_REQUEST - 1);
	}
	else if (err == -ETIMEDOUT)
		fprintf(out, "error: no complete request within %d ms\n",
			CTL_READ_MS);
	else if (err)
		fputs("error: the request holds bytes that are not text\n", out);
	else
		run_cmd(ag, line, out);
	fclose(out);
}

static void ctl_usage(FILE *out)
{
	fprintf(out,
		"usage: milometer ctl [--socket PATH] [--json] COMMAND\n"
		"\n"
		"Ask a running agent over its debug socket.\n"
		"  status    version, uptime, programs attached, targets, route table\n"
		"  targets   traced proxy processes\n"
		"  routes    the installed route table\n"
		"  series    every series with its current value\n"
		"  stats     BPF counters, map fill, user-space counters\n"
		"  policies  MetricDefinitions and MetricPolicies with conditions\n"
		"\n"
		"  --socket PATH  default /run/milometer/milometer.sock\n"
		"  --json         machine-readable output\n");
}

int ctl__main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = "/run/milometer/milometer.sock";
	char buf[65536], line[256];
	int c, fd, json = 0;
	ssize_t n;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 's': path = optarg; break;
		case 'j': json = 1; break;
		case 'h': ctl_usage(stdout); return 0;
		default: ctl_usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		ctl_usage(stderr);
		return 2;
	}
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "milometer ctl: --socket path too long\n");
		return 2;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "milometer ctl: cannot connect to %s: %s (is `milometer run` running? see --socket)\n",
			path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	snprintf(line, sizeof(line), "%s%s\n", json ? "--json " : "",
		 argv[optind]);
	if (write(fd, line, strlen(line)) < 0) {
		close(fd);
		return 1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, n, stdout);
	close(fd);
	return 0;
}
