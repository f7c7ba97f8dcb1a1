/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Typed fields of a parsed document: the one check behind the tree's typed
 * readers (Gateway API fields, CRD fields, the agent's config file), which
 * differ only in how they report an error. A null value is an absent one
 * (as the API server treats it); a value of another kind is an error the
 * caller words with doc_field__want().
 */
#ifndef MM_POLICY_SOURCE_DOC_FIELD_H
#define MM_POLICY_SOURCE_DOC_FIELD_H

#include "policy/source/doc.h"

/*
 * map[key] as a field of this kind: 0 when absent or null (*out NULL), 1
 * when present with the kind (*out the node), -EINVAL when present with
 * another kind (*out the node, for the message). map may be NULL.
 */
int doc_field__get(const struct doc_node *map, const char *key,
		   enum doc_kind kind, const struct doc_node **out);
/* The same for a value already in hand (a list item, a config value). */
int doc_field__is(const struct doc_node *n, enum doc_kind kind);
/* What a field of this kind must be, for messages: "a string", ... */
const char *doc_field__want(enum doc_kind kind);

#endif /* MM_POLICY_SOURCE_DOC_FIELD_H */
