// SPDX-License-Identifier: Apache-2.0
/* `milometer top`: see agent/top.h. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_MODULE "top"
#include "agent/cmd/cmd.h"
#include "agent/top.h"
#include "policy/util/log.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: milometer top [--socket PATH | --prometheus-url URL] [--sort KEY]\n"
		"                     [--once] [-o table|json] [--interval S] [--window S]\n"
		"\n"
		"Per HTTPRoute rule and leg (down: client to proxy, up: proxy to\n"
		"backend): requests per second, success rate (not 5xx, not aborted),\n"
		"p50/p95/p99 latency (ms, computed as histogram_quantile() does),\n"
		"requests since the series started. unmatched: no rule matched;\n"
		"unknown: the route could not be told.\n"
		"\n"
		"  --socket PATH         the local agent's debug socket\n"
		"                        (default /run/milometer/milometer.sock)\n"
		"  --prometheus-url URL  cluster-wide, from a Prometheus query API that\n"
		"                        scrapes the agents (e.g. http://prometheus:9090)\n"
		"  --sort KEY            rps (default), success, p50, p95, p99, requests, route\n"
		"  --once                print one frame and exit (figures since start,\n"
		"                        rps over one --interval; with --window S, all\n"
		"                        over the next S seconds)\n"
		"  -o, --output FORMAT   table (default) or json\n"
		"  --interval S          seconds between refreshes (default 1)\n"
		"  --window S            success and percentiles over the last S seconds\n"
		"                        (default 30; 0: since the series started; --once: 0)\n"
		"  --rate-range RANGE    Prometheus: the rate() range for rps (default 1m)\n"
		"\n"
		"Keys while live: r rps, s success, 5 p50, 9 p95, 0 p99, n requests,\n"
		"o route, q quit.\n");
}

int top__main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "socket", required_argument, NULL, 'S' },
		{ "prometheus-url", required_argument, NULL, 'P' },
		{ "sort", required_argument, NULL, 's' },
		{ "once", no_argument, NULL, '1' },
		{ "output", required_argument, NULL, 'o' },
		{ "interval", required_argument, NULL, 'i' },
		{ "window", required_argument, NULL, 'w' },
		{ "rate-range", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct top_opts o = {
		.socket = "/run/milometer/milometer.sock",
		.sort = RT_SORT_RPS,
		.interval_s = 1,
		.window_s = NAN,
		.rate_range = "1m",
	};
	char *end;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:", lopts, NULL)) != -1) {
		switch (c) {
		case 'S':
			o.socket = optarg;
			break;
		case 'P':
			o.prometheus_url = optarg;
			break;
		case 'R':
			o.rate_range = optarg;
			break;
		case '1':
			o.once = true;
			break;
		case 's':
			if (rt_sort__parse(optarg, &o.sort)) {
				pr_err("--sort %s: use rps, success, p50, p95, p99, requests or route\n",
				       optarg);
				return 2;
			}
			break;
		case 'o':
			if (strcmp(optarg, "json") && strcmp(optarg, "table")) {
				pr_err("-o %s: use table or json\n", optarg);
				return 2;
			}
			o.json = !strcmp(optarg, "json");
			break;
		case 'i':
		case 'w':
			errno = 0;
			(c == 'i' ? &o.interval_s : &o.window_s)[0] =
				strtod(optarg, &end);
			if (errno || *end || end == optarg ||
			    (c == 'i' ? o.interval_s <= 0 || o.interval_s > 3600
				      : o.window_s < 0 || o.window_s > 600)) {
				pr_err("--%s %s: a number of seconds, %s\n",
				       c == 'i' ? "interval" : "window", optarg,
				       c == 'i' ? "above 0, at most 3600"
						: "0 to 600");
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (isnan(o.window_s))
		o.window_s = o.once ? 0 : 30;
	return top__run(&o);
}
