/* SPDX-License-Identifier: Apache-2.0 */
/* `milometer translate` with --kubeconfig: the objects read from a cluster. */
#ifndef MM_AGENT_K8S_TRANSLATE_API_H
#define MM_AGENT_K8S_TRANSLATE_API_H

int translate_api__main(int argc, char **argv);

#endif /* MM_AGENT_K8S_TRANSLATE_API_H */
