/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `milometer check --manifests DIR [--manifests FILE...] [--json]
 * [--kubeconfig FILE | --cluster] [--from-cluster] [-v]`: validate
 * MetricDefinitions, MetricPolicies and ClusterProperties offline, print
 * each object with file:line and its conditions, and dry-run the policy
 * engine so Programmed shows what would be produced from the manifests'
 * subject objects. Exit 0 when everything is accepted, 1 when any object is
 * rejected or a manifest cannot be parsed, 2 on usage errors (including an
 * unreadable path).
 */
#ifndef MM_POLICY_CHECK_CMD_H
#define MM_POLICY_CHECK_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct manifest_source;

/*
 * What `check --kubeconfig` / `--cluster` reads from a cluster: the API
 * client lives above policy/ (agent/k8s), so the command's front passes it
 * in. open() fills *crds with the installed CustomResourceDefinitions and,
 * when objects is set (--from-cluster), *objs with the objects milometer
 * reads; 0, or -errno with the server's URL and the fix in err.
 */
struct check_api {
	int (*open)(const char *kubeconfig, bool objects,
		    struct manifest_source **crds,
		    struct manifest_source **objs, void **handle, char *server,
		    size_t serverlen, char *err, size_t errlen);
	void (*close)(void *handle);
};

int check__main(int argc, char **argv);
/* Same, writing to out/err instead of stdout/stderr (tests). */
int check__run(int argc, char **argv, FILE *out, FILE *err);
/* With a cluster client; api NULL: manifests only. */
int check__run_api(int argc, char **argv, FILE *out, FILE *err,
		   const struct check_api *api);

#endif /* MM_POLICY_CHECK_CMD_H */
