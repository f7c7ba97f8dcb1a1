// SPDX-License-Identifier: Apache-2.0
/* milometer: command dispatch. */
#include <stdio.h>
#include <string.h>

#include "agent/cmd/cmd.h"
#include "policy/util/log.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: milometer COMMAND [options]\n"
		"\n"
		"Per-HTTPRoute metrics of a gateway proxy, measured with eBPF.\n"
		"\n"
		"  run       trace the proxy and serve/export metrics (root)\n"
		"  ctl       ask a running agent (status, targets, routes, series,\n"
		"            stats, policies, features)\n"
		"  top       live per-route requests/s, success rate, latency\n"
		"  explain   which HTTPRoute rule a request would match, and why\n"
		"  check     validate MetricDefinitions/MetricPolicies offline\n"
		"  translate compile the contract into Prometheus rules (and others)\n"
		"  controller  write MetricDefinition/MetricPolicy status (Lease-elected)\n"
		"  metrics-reference  print the reference of every metric (Markdown)\n"
		"  version   print the version\n"
		"\n"
		"`milometer COMMAND --help` describes each command.\n");
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd || !strcmp(cmd, "-h") || !strcmp(cmd, "--help") ||
	    !strcmp(cmd, "help")) {
		usage(cmd ? stdout : stderr);
		return cmd ? 0 : 2;
	}
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("milometer %s\n", MM_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "run"))
		return run__main(argc - 1, argv + 1);
	if (!strcmp(cmd, "ctl"))
		return ctl__main(argc - 1, argv + 1);
	if (!strcmp(cmd, "top"))
		return top__main(argc - 1, argv + 1);
	if (!strcmp(cmd, "explain"))
		return explain__main(argc - 1, argv + 1);
	if (!strcmp(cmd, "check"))
		return check_api__main(argc - 1, argv + 1);
	if (!strcmp(cmd, "metrics-reference"))
		return metrics_ref__main(argc - 1, argv + 1);
	if (!strcmp(cmd, "translate"))
		return translate_api__main(argc - 1, argv + 1);
	if (!strcmp(cmd, "controller"))
		return controller__main(argc - 1, argv + 1);
	pr_err("unknown command \"%s\"\n", cmd);
	fputc('\n', stderr);
	usage(stderr);
	return 2;
}
