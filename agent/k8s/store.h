/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The objects of one resource as last seen, keyed by namespace/name (the
 * uid tells a re-created object from an updated one), like client-go's
 * thread-safe store behind an informer. Add/update/delete callbacks run
 * under the store lock on the reflector's thread. An update whose
 * resourceVersion equals the stored one is not a change, so a relist that
 * returns the same objects fires nothing; replace() deletes what the new
 * list no longer has (client-go's DeltaFIFO.Replace).
 */
#ifndef MM_AGENT_K8S_STORE_H
#define MM_AGENT_K8S_STORE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;

enum k8s_change { K8S_ADDED, K8S_UPDATED, K8S_DELETED };

/* obj is the new state (the last state for K8S_DELETED); old or NULL. */
typedef void (*k8s_store_fn)(enum k8s_change what, struct json_object *obj,
			     struct json_object *old, void *ctx);

struct k8s_store;

struct k8s_store *k8s_store__new(k8s_store_fn fn, void *ctx);
void k8s_store__free(struct k8s_store *s);
/* Add or update from a watch event or a list item; takes a reference. */
void k8s_store__upsert(struct k8s_store *s, struct json_object *obj);
void k8s_store__delete(struct k8s_store *s, struct json_object *obj);
/* Make the store equal to items (a json array); takes references. */
void k8s_store__replace(struct k8s_store *s, struct json_object *items);
size_t k8s_store__count(struct k8s_store *s);
/* Bumps on every add, update or delete. */
uint64_t k8s_store__generation(struct k8s_store *s);
/*
 * Visit every object under the store lock (keep the visit short: the
 * reflector waits). Stops at the first non-zero return.
 */
int k8s_store__foreach(struct k8s_store *s,
		       int (*fn)(struct json_object *obj, void *ctx),
		       void *ctx);
/* "ns/name" or "name" of obj into buf. */
void k8s_store__key(struct json_object *obj, char *buf, size_t len);

#endif /* MM_AGENT_K8S_STORE_H */
