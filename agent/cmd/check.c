// SPDX-License-Identifier: Apache-2.0
/* `milometer check`: see check.h. */
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/model/metric_store.h"
#include "agent/cmd/check.h"
#include "policy/contract/check_gateway.h"
#include "policy/contract/contract.h"
#include "policy/source/manifest_source.h"
#include "policy/contract/policy_engine.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: milometer check --manifests PATH [--manifests PATH...] [--json]\n"
		"\n"
		"Validate Gateway, HTTPRoute, Namespace, MetricDefinition,\n"
		"MetricPolicy and ClusterProperty objects in YAML manifests (the\n"
		"*.yaml/*.yml files under a directory and its sub-directories, or\n"
		"single files) without a cluster. Prints every object with file:line\n"
		"and its conditions (HTTPRoutes: per parentRef, as the Gateway API\n"
		"writes them), warnings about what may be wrong, and what was skipped;\n"
		"Programmed shows what the policies would produce from the subject\n"
		"objects found in the same manifests.\n"
		"\n"
		"  -m, --manifests PATH  directory or file to read (repeatable)\n"
		"  -j, --json            machine-readable output\n"
		"  -h, --help            this text\n"
		"\n"
		"Exit status: 0 all accepted (warnings allowed), 1 something rejected\n"
		"(a route's dropped rule included) or unparsable,\n"
		"2 usage error or unreadable path.\n");
}

int check__run(int argc, char **argv, FILE *out, FILE *errf)
{
	static const struct option opts[] = {
		{ "manifests", required_argument, NULL, 'm' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char **paths = calloc(argc + 1, sizeof(*paths));
	struct manifest_source *src = NULL;
	struct contract *c = NULL;
	struct mstore *store = NULL;
	struct policy_engine *e = NULL;
	size_t npaths = 0;
	bool json = false;
	char err[512];
	int ret = 2, opt;

	if (!paths)
		return 2;
	optind = 0; /* GNU: full reset, so tests can call us repeatedly */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "m:jh", opts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			paths[npaths++] = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(out);
			ret = 0;
			goto cleanup;
		default:
			fprintf(errf, "milometer check: unknown option %s\n",
				argv[optind - 1]);
			usage(errf);
			goto cleanup;
		}
	}
	if (optind < argc) {
		fprintf(errf, "milometer check: unexpected argument \"%s\"\n",
			argv[optind]);
		usage(errf);
		goto cleanup;
	}
	if (!npaths) {
		fprintf(errf, "milometer check: --manifests PATH is required\n");
		usage(errf);
		goto cleanup;
	}
	src = manifest_source__open_paths(paths, npaths, err, sizeof(err));
	if (!src) {
		fprintf(errf, "milometer check: %s\n", err);
		goto cleanup;
	}
	c = contract__new();
	store = mstore__new(NULL);
	e = c && store ? policy_engine__new(store, c) : NULL;
	if (!e || contract__load(c, src) || policy_engine__sync(e, src) < 0 ||
	    check_gateway__validate(src, c)) {
		fprintf(errf, "milometer check: out of memory\n");
		goto cleanup;
	}
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		policy_engine__collect_resource_fields(
			e, (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec);
	}
	contract__render(c, out, json ? CONTRACT_RENDER_JSON : 0);
	ret = contract__rejected(c) ? 1 : 0;
cleanup:
	policy_engine__free(e);
	mstore__free(store);
	contract__free(c);
	manifest_source__free(src);
	free(paths);
	return ret;
}

int check__main(int argc, char **argv)
{
	return check__run(argc, argv, stdout, stderr);
}
