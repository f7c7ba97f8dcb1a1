// SPDX-License-Identifier: Apache-2.0
/* `milometer ctl`: the client of the agent's debug socket (agent/ctl.c). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define LOG_MODULE "ctl"
#include "agent/cmd/cmd.h"
#include "policy/util/log.h"

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
		"  k8s       API watches: state, objects, relists, errors, sync age\n"
		"  features  feature gates: stage, default, enabled\n"
		"  tls       TLS capture: hooked libraries, uprobes per process\n"
		"  top       cumulative per-route figures (JSON; `milometer top` reads it)\n"
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
		case 's':
			path = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			ctl_usage(stdout);
			return 0;
		default:
			ctl_usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		ctl_usage(stderr);
		return 2;
	}
	if (strlen(path) >= sizeof(sa.sun_path)) {
		pr_err("--socket path too long\n");
		return 2;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (errno == EACCES || errno == EPERM)
			pr_err("permission denied on %s: the debug socket is root-only (mode 0600; it shows every tenant's series): run ctl as root, e.g. sudo milometer ctl\n",
			       path);
		else
			pr_err("cannot connect to %s: %s (is `milometer run` running? see --socket)\n",
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
