/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `milometer check` with --kubeconfig / --cluster / --from-cluster: the
 * installed CustomResourceDefinitions (and objects) read from a cluster.
 */
#ifndef MM_AGENT_K8S_CHECK_API_H
#define MM_AGENT_K8S_CHECK_API_H

int check_api__main(int argc, char **argv);

#endif /* MM_AGENT_K8S_CHECK_API_H */
