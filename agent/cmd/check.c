// SPDX-License-Identifier: Apache-2.0
/* `milometer check`: see check.h. */
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOG_MODULE "check"
#include "policy/model/metric_store.h"
#include "agent/cmd/check.h"
#include "policy/contract/check_gateway.h"
#include "policy/contract/contract.h"
#include "policy/contract/crd_policy.h"
#include "policy/contract/policy_lint.h"
#include "policy/source/manifest_source.h"
#include "policy/contract/policy_engine.h"
#include "policy/util/log.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: milometer check --manifests PATH [--manifests PATH...] [--json]\n"
		"                       [--kubeconfig FILE | --cluster] [-v]\n"
		"       milometer check --from-cluster [--kubeconfig FILE] [--json] [-v]\n"
		"\n"
		"Validate Gateway, HTTPRoute, Namespace, MetricDefinition,\n"
		"MetricPolicy and ClusterProperty objects in YAML manifests (the\n"
		"*.yaml/*.yml files under a directory and its sub-directories, or\n"
		"single files), or in a cluster (--from-cluster). Prints every object\n"
		"with file:line and its conditions (HTTPRoutes: per parentRef, as the\n"
		"Gateway API writes them), warnings about what may be wrong, and what\n"
		"was skipped; Programmed shows what the policies would produce from\n"
		"the subject objects found in the same manifests.\n"
		"\n"
		"  -m, --manifests PATH  directory or file to read (repeatable)\n"
		"  -k, --kubeconfig FILE also read the CustomResourceDefinitions\n"
		"                        installed in this kubeconfig's cluster: paths\n"
		"                        into a custom subject kind are checked against\n"
		"                        its served version's openAPIV3Schema (a CRD in\n"
		"                        the manifests wins)\n"
		"  -c, --cluster         the same with the cluster found as the agent\n"
		"                        finds it ($KUBECONFIG, in-cluster, ~/.kube/config)\n"
		"  -F, --from-cluster    check the objects in the cluster instead of\n"
		"                        manifests (the kinds milometer reads)\n"
		"  -v, --verbose         say which schema each policy's subject is held to\n"
		"  -j, --json            machine-readable output\n"
		"  -h, --help            this text\n"
		"\n"
		"Exit status: 0 all accepted (warnings allowed), 1 something rejected\n"
		"(a route's dropped rule included) or unparsable,\n"
		"2 usage error or unreadable path.\n");
}

/* -v: which schema each policy's subject is held to, and from where. */
static void say_schemas(FILE *f, const struct manifest_source *src,
			const struct manifest_source *crds, const char *server)
{
	const struct mobject *m = NULL;
	char what[512];

	if (crds)
		fprintf(f,
			"schemas: %zu CustomResourceDefinition(s) installed in the cluster %s\n",
			manifest_source__count(crds), server);
	while ((m = manifest_source__next(src, "MetricPolicy", m))) {
		struct metric_policy *p = NULL;
		struct crd_err e = { 0 };

		if (crd_policy__parse(m, &p, &e))
			continue; /* its condition says why */
		policy_lint__schema(p, src, crds, what, sizeof(what));
		fprintf(f,
			"schema: %s:%u: MetricPolicy %s: subject %s%s%s: %s\n",
			m->file, m->line, m->name ? m->name : "", p->subj_group,
			*p->subj_group ? "/" : "", p->subj_kind, what);
		crd_policy__put(p);
	}
}

int check__run(int argc, char **argv, FILE *out, FILE *errf)
{
	return check__run_api(argc, argv, out, errf, NULL);
}

int check__run_api(int argc, char **argv, FILE *out, FILE *errf,
		   const struct check_api *api)
{
	static const struct option opts[] = {
		{ "manifests", required_argument, NULL, 'm' },
		{ "kubeconfig", required_argument, NULL, 'k' },
		{ "cluster", no_argument, NULL, 'c' },
		{ "from-cluster", no_argument, NULL, 'F' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char **paths = calloc(argc + 1, sizeof(*paths));
	struct manifest_source *src = NULL;
	struct contract *c = NULL;
	struct mstore *store = NULL;
	struct policy_engine *e = NULL;
	struct manifest_source *crds = NULL, *objs = NULL;
	const char *kubeconfig = NULL;
	void *handle = NULL;
	size_t npaths = 0;
	bool json = false, cluster = false, from_cluster = false;
	bool verbose = false;
	char err[512], server[256] = "";
	int ret = 2, opt;

	if (!paths)
		return 2;
	optind = 0; /* GNU: full reset, so tests can call us repeatedly */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "m:k:cFvjh", opts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			paths[npaths++] = optarg;
			break;
		case 'k':
			kubeconfig = optarg;
			cluster = true;
			break;
		case 'c':
			cluster = true;
			break;
		case 'F':
			from_cluster = cluster = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(out);
			ret = 0;
			goto cleanup;
		default:
			pr_err("unknown option %s\n", argv[optind - 1]);
			usage(errf);
			goto cleanup;
		}
	}
	if (optind < argc) {
		pr_err("unexpected argument \"%s\"\n", argv[optind]);
		usage(errf);
		goto cleanup;
	}
	if (!npaths && !from_cluster) {
		pr_err("--manifests PATH is required (or --from-cluster)\n");
		usage(errf);
		goto cleanup;
	}
	if (npaths && from_cluster) {
		pr_err("--from-cluster checks the cluster's objects, --manifests the files': run check once for each\n");
		goto cleanup;
	}
	if (cluster && !api) {
		pr_err("this build has no Kubernetes client; put the CustomResourceDefinitions in the manifests instead of --kubeconfig\n");
		goto cleanup;
	}
	if (cluster && api->open(kubeconfig, from_cluster, &crds,
				 from_cluster ? &objs : NULL, &handle, server,
				 sizeof(server), err, sizeof(err))) {
		pr_err("%s\n", err);
		goto cleanup;
	}
	if (from_cluster) {
		src = objs;
		objs = NULL; /* freed as src */
	} else {
		src = manifest_source__open_paths(paths, npaths, err,
						  sizeof(err));
	}
	if (!src) {
		pr_err("%s\n", err);
		goto cleanup;
	}
	c = contract__new();
	if (c)
		contract__set_schemas(c, crds);
	store = mstore__new(NULL);
	e = c && store ? policy_engine__new(store, c) : NULL;
	if (!e || contract__load(c, src) || policy_engine__sync(e, src) < 0 ||
	    check_gateway__validate(src, c)) {
		pr_err("out of memory\n");
		goto cleanup;
	}
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		policy_engine__collect_resource_fields(
			e, (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec);
	}
	if (verbose)
		say_schemas(json ? errf : out, src, crds, server);
	contract__render(c, out, json ? CONTRACT_RENDER_JSON : 0);
	ret = contract__rejected(c) ? 1 : 0;
cleanup:
	policy_engine__free(e);
	mstore__free(store);
	contract__free(c);
	manifest_source__free(src);
	manifest_source__free(crds);
	if (handle)
		api->close(handle);
	free(paths);
	return ret;
}

int check__main(int argc, char **argv)
{
	return check__run_api(argc, argv, stdout, stderr, NULL);
}
