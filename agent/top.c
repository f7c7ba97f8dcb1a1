// SPDX-License-Identifier: Apache-2.0
/* `milometer top`: see top.h. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define LOG_MODULE "top"
#include "agent/top.h"
#include "policy/util/log.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int fetch_socket(const char *path, struct rt_snap *snap, char *err,
			size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *buf = NULL, chunk[65536];
	size_t len = 0;
	ssize_t n;
	int fd, ret;
	FILE *f;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "--socket %s: path too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		snprintf(
			err, errlen,
			"cannot connect to %s: %s (is `milometer run` running? see --socket, or use --prometheus-url)",
			path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	f = open_memstream(&buf, &len);
	if (!f || write(fd, "top\n", 4) != 4) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (f)
			fclose(f);
		free(buf);
		close(fd);
		return ret;
	}
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		fwrite(chunk, 1, n, f);
	close(fd);
	fclose(f);
	ret = rt_snap__parse_json(snap, buf ? buf : "", err, errlen);
	free(buf);
	return ret;
}

static int fetch_prometheus(const struct top_opts *o, struct rt_snap *snap,
			    char *err, size_t errlen)
{
	return rt_snap__from_prometheus(snap, o->prometheus_url, o->rate_range,
					err, errlen);
}

int top__fetch(const struct top_opts *o, struct rt_snap *snap, char *err,
	       size_t errlen)
{
	if (o->prometheus_url)
		return fetch_prometheus(o, snap, err, errlen);
	return fetch_socket(o->socket, snap, err, errlen);
}

static const char *const sort_names[] = {
	[RT_SORT_ROUTE] = "route",       [RT_SORT_RPS] = "rps",
	[RT_SORT_SUCCESS] = "success",   [RT_SORT_P50] = "p50",
	[RT_SORT_P95] = "p95",           [RT_SORT_P99] = "p99",
	[RT_SORT_REQUESTS] = "requests",
};

static void frame(const struct top_opts *o, const struct rt_snap *cur,
		  const struct rt_snap *prev, const struct rt_snap *base,
		  enum rt_sort sort, bool screen)
{
	struct rt_stat *st = calloc(cur->n ? cur->n : 1, sizeof(*st));
	char when[16], window[32];
	time_t t = (time_t)cur->t;
	struct tm tm;

	if (!st)
		return;
	rt_view__compute(cur, prev, base, st);
	rt_view__sort(st, cur->n, sort);
	if (o->json) {
		rt_view__write_json(stdout, st, cur->n);
	} else {
		localtime_r(&t, &tm);
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
		if (base)
			snprintf(window, sizeof(window), "last %.0fs",
				 cur->t - base->t);
		else
			snprintf(window, sizeof(window), "since start");
		if (screen)
			fputs("\033[H\033[2J", stdout);
		printf("milometer top  %s  source %s  sort %s  window %s  %s\n",
		       when, o->prometheus_url ? o->prometheus_url : o->socket,
		       sort_names[sort], window,
		       screen ? "keys: r rps, s success, 5 p50, 9 p95, 0 p99, n requests, o route, q quit"
			      : "");
		rt_view__write_table(stdout, st, cur->n);
	}
	fflush(stdout);
	free(st);
}

static volatile sig_atomic_t stop;

static void on_signal(int s)
{
	stop = 1;
}

static bool key_sort(int ch, enum rt_sort *sort)
{
	static const char keys[] = {
		[RT_SORT_ROUTE] = 'o',   [RT_SORT_RPS] = 'r',
		[RT_SORT_SUCCESS] = 's', [RT_SORT_P50] = '5',
		[RT_SORT_P95] = '9',     [RT_SORT_P99] = '0',
		[RT_SORT_REQUESTS] = 'n'
	};

	for (size_t i = 0; i < sizeof(keys); i++) {
		if (keys[i] == ch) {
			*sort = (enum rt_sort)i;
			return true;
		}
	}
	return false;
}

#define RING 600 /* snapshots kept for the window: 10 min at 1 s */

int top__run(const struct top_opts *o)
{
	struct rt_snap ring[RING] = {}, *cur, *prev = NULL;
	enum rt_sort sort = o->sort;
	bool tty = !o->once && !o->json && isatty(STDIN_FILENO) &&
		   isatty(STDOUT_FILENO);
	struct termios saved, raw;
	size_t head = 0, count = 0;
	char err[512];
	int ret = 0;

	if (o->once) {
		/* two snapshots one interval apart: the requests per second */
		struct rt_snap a = {}, b = {};

		ret = top__fetch(o, &a, err, sizeof(err));
		if (!ret && !o->prometheus_url) {
			/* --window S: the frame covers the S seconds waited */
			usleep((useconds_t)((o->window_s > 0 ? o->window_s
							     : o->interval_s) *
					    1e6));
			ret = top__fetch(o, &b, err, sizeof(err));
		}
		if (ret) {
			pr_err("%s\n", err);
		} else if (o->prometheus_url) {
			frame(o, &a, NULL, NULL, sort, false);
		} else {
			frame(o, &b, &a, o->window_s > 0 ? &a : NULL, sort,
			      false);
		}
		rt_snap__free(&a);
		rt_snap__free(&b);
		return ret ? 1 : 0;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (tty && !tcgetattr(STDIN_FILENO, &saved)) {
		raw = saved;
		raw.c_lflag &= ~(ICANON | ECHO);
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	} else {
		tty = false;
	}
	while (!stop) {
		struct rt_snap *base = NULL, *fprev;
		double next;

		cur = &ring[head];
		ret = top__fetch(o, cur, err, sizeof(err));
		if (ret) {
			pr_err("%s\n", err);
			break;
		}
		/* the oldest snapshot still inside the window */
		for (size_t k = count; k > 0 && o->window_s > 0; k--) {
			struct rt_snap *s = &ring[(head + RING - k) % RING];

			if (cur->t - s->t <= o->window_s + 0.5) {
				base = s;
				break;
			}
		}
		/* the first frame, with nothing older, covers since start */
		frame(o, cur, prev, base, sort, tty);
		fprev = prev;
		prev = cur;
		head = (head + 1) % RING;
		count += count < RING - 1;
		next = now_s() + o->interval_s;
		while (!stop && now_s() < next) {
			struct pollfd p = { .fd = STDIN_FILENO,
					    .events = POLLIN };
			int ms = (int)((next - now_s()) * 1000) + 1;
			char ch;

			if (!tty) {
				usleep(ms * 1000);
				continue;
			}
			if (poll(&p, 1, ms) <= 0 ||
			    read(STDIN_FILENO, &ch, 1) != 1)
				continue;
			if (ch == 'q') {
				stop = 1;
			} else if (key_sort(ch, &sort)) {
				/* redraw at once in the new order */
				frame(o, cur, fprev, base, sort, tty);
			}
		}
	}
	if (tty)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	for (size_t i = 0; i < RING; i++)
		rt_snap__free(&ring[i]);
	return ret ? 1 : 0;
}
