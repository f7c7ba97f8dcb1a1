/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A json-c value as a doc_node tree (policy/source/doc.h), the object
 * model the contract, CEL and the route compiler read, so objects from the
 * API and from YAML manifests are one model. Every node's file is label
 * (borrowed: it must outlive the tree), line 0.
 */
#ifndef MM_AGENT_K8S_JSON_DOC_H
#define MM_AGENT_K8S_JSON_DOC_H

struct json_object;
struct doc_node;

/* NULL on allocation failure or a tree deeper than DOC_MAX_DEPTH. */
struct doc_node *k8s_json_doc__convert(struct json_object *o,
				       const char *label);

#endif /* MM_AGENT_K8S_JSON_DOC_H */
