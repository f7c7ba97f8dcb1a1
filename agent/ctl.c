// SPDX-License-Identifier: Apache-2.0
/*
 * The debug socket (`milometer ctl`): the server side on the agent's event
 * loop, and the client command. See ctl.h, and below for why nothing here
 * blocks.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/pipeline/aggregate.h"
#include "agent/ctl.h"
#include "agent/config/features.h"
#include "agent/loader.h"
#include "agent/route_sync.h"
#include "exporter/route_view.h"
#include "agent/self_metrics.h"
#include "agent/state.h"
#include "agent/targets.h"
#include "agent/tls_capture.h"
#include "policy/util/json_out.h"
#include "agent/k8s/api_source.h"
#include "policy/model/metric_store.h"
#include "policy/contract/contract.h"
#include "policy/util/log.h"

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

/*
 * The debug socket is served on the agent's event loop, the thread that
 * drains the ring buffer, so nothing here may wait: every socket is
 * non-blocking, a client is a small state machine driven by epoll (read
 * the command, render the whole answer into memory, write it as the peer
 * takes it), and a client gets CTL_CLIENT_MS from accept to its last byte
 * before it is dropped. The store lock is held only while rendering into
 * memory (mstore__collect), never while writing to a socket.
 */
#define CTL_MAX_CLIENTS 8
#define CTL_CMD_MAX     256
#define CTL_CLIENT_MS   5000
#define CTL_REQUEST_MS  100 /* a command must arrive this soon */

struct ctl_client {
	int fd;               /* -1: free slot */
	uint64_t deadline_ns; /* CLOCK_MONOTONIC */
	char in[CTL_CMD_MAX];
	size_t inlen;
	char *out; /* rendered answer, NULL while reading */
	size_t outlen, off;
};

struct ctl {
	int lfd, ep;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct ctl_client c[CTL_MAX_CLIENTS];
	uint64_t dropped; /* clients refused (busy) or timed out */
};

/*
 * The socket answers anyone who can connect, with every tenant's series
 * (ctl series): it must be ours alone. A filesystem that ignores the
 * umask (some FUSE mounts) or an owner other than us is refused.
 */
static int check_private(const char *path)
{
	struct stat st;

	if (lstat(path, &st)) {
		pr_err("%s: %s\n", path, strerror(errno));
		return -errno;
	}
	if (!S_ISSOCK(st.st_mode) || (st.st_mode & 0777) != 0600 ||
	    st.st_uid != geteuid()) {
		pr_warn("%s:%d: the debug socket %s is mode %03o owned by uid %u, not 0600 owned by uid %u: put --socket on a filesystem that honours the umask (e.g. /run)\n",
			__FILE__, __LINE__, path, st.st_mode & 0777,
			(unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	return 0;
}

static int ctl_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		pr_err("--socket %s: path too long\n", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	err = mkdir_parent(path);
	if (err) {
		pr_err("cannot create the directory of %s: %s\n", path,
		       strerror(-err));
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
		pr_err("cannot listen on %s: %s\n", path, strerror(errno));
		close(fd);
		return err;
	}
	err = check_private(path);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

struct ctl *ctl__open(const char *path)
{
	struct ctl *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ep = -1;
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		c->c[i].fd = -1;
	snprintf(c->path, sizeof(c->path), "%s", path);
	c->lfd = ctl_listen(path);
	if (c->lfd < 0) {
		free(c);
		return NULL;
	}
	return c;
}

int ctl__attach(struct ctl *c, int ep)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = c->lfd };

	c->ep = ep;
	return epoll_ctl(ep, EPOLL_CTL_ADD, c->lfd, &ev) ? -errno : 0;
}

static void client_close(struct ctl *c, struct ctl_client *cl)
{
	if (cl->fd < 0)
		return;
	if (c->ep >= 0)
		epoll_ctl(c->ep, EPOLL_CTL_DEL, cl->fd, NULL);
	/*
	 * Closing with unread input resets the connection, and the peer may
	 * lose the answer (an oversized request is answered after 255 bytes):
	 * end our side, drop what is already queued (bounded), then close.
	 */
	shutdown(cl->fd, SHUT_WR);
	for (int i = 0; i < 16; i++) {
		char sink[4096];

		if (recv(cl->fd, sink, sizeof(sink), MSG_DONTWAIT) <= 0)
			break;
	}
	close(cl->fd);
	free(cl->out);
	memset(cl, 0, sizeof(*cl));
	cl->fd = -1;
}

void ctl__close(struct ctl *c)
{
	if (!c)
		return;
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		client_close(c, &c->c[i]);
	close(c->lfd);
	unlink(c->path);
	free(c);
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
			fprintf(sc->out,
				"%s{\"metric\":", sc->first ? "" : ",\n");
			json_out__str(sc->out, d->name);
			fputs(",\"labels\":{", sc->out);
			for (size_t j = 0; j < p->nlabels; j++) {
				fputs(j ? "," : "", sc->out);
				json_out__str(sc->out, p->labels[j].key);
				fputc(':', sc->out);
				json_out__str(sc->out, p->labels[j].value);
			}
			if (hist) {
				fprintf(sc->out, "},\"count\":%llu,\"sum\":",
					(unsigned long long)p->count);
				json_out__double(sc->out, p->sum);
			} else {
				fputs("},\"value\":", sc->out);
				json_out__double(sc->out,
						 d->is_int ? (double)p->ivalue
							   : p->value);
			}
			fputc('}', sc->out);
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
	uint64_t up = (state__real_ns() - ag->start_ns) / 1000000000ULL;

	loader__attached(ag->skel, &att, &tot);
	if (json) {
		fputc('{', out);
		json_out__key(out, "version");
		json_out__str(out, MM_VERSION);
		fprintf(out,
			",\"uptime_s\":%llu,\"ready\":%s,"
			"\"programs_attached\":%d,\"programs\":%d,\"targets\":%d,"
			"\"capture_mode\":\"%s\",\"loops\":\"%s\","
			"\"parse_steps\":%u,"
			"\"route_reloads\":%llu,\"route_error\":",
			(unsigned long long)up, ag->ready ? "true" : "false",
			att, tot, targets__count(ag->skel),
			loader__capture_mode(), loader__loops(),
			loader__parse_steps(),
			(unsigned long long)route_sync__reloads(ag->routes));
		json_out__str(out, rerr); /* null when none */
		fprintf(out, ",\"otlp\":%s}\n", ag->otlp ? "true" : "false");
		return;
	}
	fprintf(out, "milometer %s, up %llus, %s\n", MM_VERSION,
		(unsigned long long)up, ag->ready ? "ready" : ag->not_ready);
	fprintf(out,
		"programs attached: %d/%d, target processes: %d, capture mode: %s, loops: %s, parser steps: %u\n",
		att, tot, targets__count(ag->skel), loader__capture_mode(),
		loader__loops(), loader__parse_steps());
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
		mstore__collect(ag->store, MT_CUMULATIVE, state__real_ns(),
				dump_metric, &sc);
		if (json)
			fputs("]\n", out);
	} else if (!strcmp(cmd, "top")) {
		/* always JSON: `milometer top` parses it */
		struct rt_snap snap = {};

		if (rt_snap__from_store(&snap, ag->store, state__real_ns()))
			fputs("{\"error\":\"collecting the source series failed\"}\n",
			      out);
		else
			rt_snap__write_json(out, &snap);
		rt_snap__free(&snap);
	} else if (!strcmp(cmd, "features")) {
		features__dump(ag->features, out, json);
	} else if (!strcmp(cmd, "tls")) {
		tls_capture__dump(ag->tls, out, json);
	} else if (!strcmp(cmd, "stats")) {
		self_metrics__dump(ag->self, out, json);
	} else if (!strcmp(cmd, "policies")) {
		if (ag->contract)
			contract__render(ag->contract, out,
					 json ? CONTRACT_RENDER_JSON : 0);
		else
			fputs(json ? "[]\n"
				   : "no MetricDefinitions or MetricPolicies loaded\n",
			      out);
	} else if (!strcmp(cmd, "k8s")) {
		if (ag->k8s)
			k8s_api__dump(ag->k8s, out, json);
		else
			fputs(json ? "{}\n"
				   : "not watching the Kubernetes API (--manifests)\n",
			      out);
	} else {
		fprintf(out,
			"error: unknown command \"%s\" (status, targets, routes, series, stats, policies, k8s, features, tls, top)\n",
			cmd);
	}
}

/* Write what the peer takes now; close when all is written or it failed. */
static void client_write(struct ctl *c, struct ctl_client *cl)
{
	while (cl->off < cl->outlen) {
		ssize_t n = send(cl->fd, cl->out + cl->off,
				 cl->outlen - cl->off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return; /* EPOLLOUT brings us back */
		if (n <= 0)
			break;
		cl->off += n;
	}
	client_close(c, cl);
}

/*
 * What is wrong with a request, or NULL: one line of text shorter than
 * CTL_CMD_MAX (a hostile or broken client gets an answer, not the agent's
 * time: the loop that serves the socket also drains the ring buffer).
 */
static const char *request_error(const struct ctl_client *cl)
{
	if (cl->inlen >= CTL_CMD_MAX - 1 && !memchr(cl->in, '\n', cl->inlen))
		return "request longer than 255 bytes";
	for (size_t i = 0; i < cl->inlen; i++)
		if (!isprint((unsigned char)cl->in[i]) &&
		    !isspace((unsigned char)cl->in[i]))
			return "the request holds bytes that are not text";
	return NULL;
}

/* The command is complete: render the answer into memory, start writing. */
static void client_answer(struct ctl *c, struct agent *ag,
			  struct ctl_client *cl)
{
	struct epoll_event ev = { .events = EPOLLOUT, .data.fd = cl->fd };
	FILE *out;

	cl->in[cl->inlen < CTL_CMD_MAX ? cl->inlen : CTL_CMD_MAX - 1] = 0;
	out = open_memstream(&cl->out, &cl->outlen);
	if (out && request_error(cl)) {
		fprintf(out, "error: %s\n", request_error(cl));
		if (fclose(out) ||
		    epoll_ctl(c->ep, EPOLL_CTL_MOD, cl->fd, &ev)) {
			client_close(c, cl);
			return;
		}
		client_write(c, cl);
		return;
	}
	if (!out) {
		client_close(c, cl);
		return;
	}
	run_cmd(ag, cl->in, out);
	if (fclose(out) || epoll_ctl(c->ep, EPOLL_CTL_MOD, cl->fd, &ev)) {
		client_close(c, cl);
		return;
	}
	client_write(c, cl);
}

static void client_read(struct ctl *c, struct agent *ag, struct ctl_client *cl)
{
	for (;;) {
		ssize_t n = recv(cl->fd, cl->in + cl->inlen,
				 CTL_CMD_MAX - 1 - cl->inlen, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n < 0) {
			client_close(c, cl);
			return;
		}
		if (!n && !cl->inlen) {
			client_close(c,
				     cl); /* connected and left: no command */
			return;
		}
		cl->inlen += n;
		/* a line, the peer's end of writing, or a full buffer */
		if (!n || memchr(cl->in, '\n', cl->inlen) ||
		    cl->inlen >= CTL_CMD_MAX - 1) {
			client_answer(c, ag, cl);
			return;
		}
	}
}

static void accept_all(struct ctl *c)
{
	for (;;) {
		struct epoll_event ev = { .events = EPOLLIN };
		struct ctl_client *cl = NULL;
		int fd = accept4(c->lfd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return; /* EAGAIN: no more pending */
		for (int i = 0; i < CTL_MAX_CLIENTS && !cl; i++)
			if (c->c[i].fd < 0)
				cl = &c->c[i];
		if (!cl) {
			static const char busy[] = "error: busy, try again\n";

			c->dropped++;
			if (send(fd, busy, sizeof(busy) - 1,
				 MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
				/* nothing more to do for it */
			}
			close(fd);
			continue;
		}
		cl->fd = fd;
		cl->deadline_ns = state__mono_ns() + CTL_CLIENT_MS * 1000000ULL;
		ev.data.fd = fd;
		if (epoll_ctl(c->ep, EPOLL_CTL_ADD, fd, &ev))
			client_close(c, cl);
	}
}

void ctl__event(struct ctl *c, struct agent *ag, int fd, unsigned events)
{
	if (fd == c->lfd) {
		accept_all(c);
		return;
	}
	for (int i = 0; i < CTL_MAX_CLIENTS; i++) {
		struct ctl_client *cl = &c->c[i];

		if (cl->fd != fd)
			continue;
		if (cl->out)
			client_write(c, cl);
		else if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			client_read(c, ag, cl);
		return;
	}
}

void ctl__expire(struct ctl *c, uint64_t mono_ns)
{
	static const char silent[] =
		"error: no complete request within 100 ms\n";

	for (int i = 0; c && i < CTL_MAX_CLIENTS; i++) {
		struct ctl_client *cl = &c->c[i];

		if (cl->fd < 0)
			continue;
		/* still no command 100 ms after it connected: told, then cut */
		if (!cl->out &&
		    mono_ns + CTL_CLIENT_MS * 1000000ULL >=
			    cl->deadline_ns + CTL_REQUEST_MS * 1000000ULL) {
			if (send(cl->fd, silent, sizeof(silent) - 1,
				 MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
				/* nothing more to do: it is closed below */
			}
			c->dropped++;
			client_close(c, cl);
			continue;
		}
		if (mono_ns >= cl->deadline_ns) {
			c->dropped++;
			client_close(c, cl);
		}
	}
}
