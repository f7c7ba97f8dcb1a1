// SPDX-License-Identifier: Apache-2.0
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "agent/k8s/store.h"

struct k8s_store {
	pthread_mutex_t lock;
	/* json-c's object is a hash table: key -> object */
	struct json_object *objs;
	k8s_store_fn fn;
	void *ctx;
	_Atomic uint64_t gen;
};

static const char *meta_str(struct json_object *o, const char *key)
{
	struct json_object *m, *v;

	if (!json_object_object_get_ex(o, "metadata", &m) ||
	    !json_object_object_get_ex(m, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool same_str(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

void k8s_store__key(struct json_object *obj, char *buf, size_t len)
{
	const char *ns = meta_str(obj, "namespace"), *n = meta_str(obj, "name");

	if (ns && ns[0])
		snprintf(buf, len, "%s/%s", ns, n ? n : "");
	else
		snprintf(buf, len, "%s", n ? n : "");
}

struct k8s_store *k8s_store__new(k8s_store_fn fn, void *ctx)
{
	struct k8s_store *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->objs = json_object_new_object();
	if (!s->objs) {
		free(s);
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->fn = fn;
	s->ctx = ctx;
	return s;
}

void k8s_store__free(struct k8s_store *s)
{
	if (!s)
		return;
	json_object_put(s->objs);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static void fire(struct k8s_store *s, enum k8s_change w, struct json_object *o,
		 struct json_object *old)
{
	s->gen++;
	if (s->fn)
		s->fn(w, o, old, s->ctx);
}

/* under the lock */
static void upsert_locked(struct k8s_store *s, struct json_object *obj)
{
	struct json_object *old = NULL;
	char key[1024];

	k8s_store__key(obj, key, sizeof(key));
	if (!key[0])
		return;
	json_object_object_get_ex(s->objs, key, &old);
	if (old &&
	    same_str(meta_str(old, "resourceVersion"),
		     meta_str(obj, "resourceVersion")) &&
	    same_str(meta_str(old, "uid"), meta_str(obj, "uid")))
		return; /* nothing new: a relist or a replayed event */
	json_object_get(obj);
	if (old && !same_str(meta_str(old, "uid"), meta_str(obj, "uid"))) {
		/* deleted and created again between two looks */
		json_object_get(old);
		json_object_object_del(s->objs, key);
		fire(s, K8S_DELETED, old, NULL);
		json_object_put(old);
		old = NULL;
	}
	if (old)
		json_object_get(old);
	json_object_object_add(s->objs, key, obj);
	fire(s, old ? K8S_UPDATED : K8S_ADDED, obj, old);
	if (old)
		json_object_put(old);
}

void k8s_store__upsert(struct k8s_store *s, struct json_object *obj)
{
	pthread_mutex_lock(&s->lock);
	upsert_locked(s, obj);
	pthread_mutex_unlock(&s->lock);
}

void k8s_store__delete(struct k8s_store *s, struct json_object *obj)
{
	struct json_object *old = NULL;
	char key[1024];

	k8s_store__key(obj, key, sizeof(key));
	pthread_mutex_lock(&s->lock);
	if (json_object_object_get_ex(s->objs, key, &old)) {
		json_object_get(old);
		json_object_object_del(s->objs, key);
		/* the event's object is the final state */
		fire(s, K8S_DELETED, obj, old);
		json_object_put(old);
	}
	pthread_mutex_unlock(&s->lock);
}

void k8s_store__replace(struct k8s_store *s, struct json_object *items)
{
	size_t n = json_object_array_length(items);
	struct json_object *keep = json_object_new_object();
	char key[1024];

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(items, i);

		upsert_locked(s, o);
		k8s_store__key(o, key, sizeof(key));
		/* a null value: json-c keeps the key, which is all we need */
		if (keep)
			json_object_object_add(keep, key, NULL);
	}
	/* known objects the new list does not have were deleted meanwhile */
	if (keep) {
		struct json_object *gone = json_object_new_array();

		json_object_object_foreach(s->objs, k, v) {
			if (!json_object_object_get_ex(keep, k, NULL) && gone)
				json_object_array_add(gone, json_object_get(v));
		}
		for (size_t i = 0; gone && i < json_object_array_length(gone);
		     i++) {
			struct json_object *v =
				json_object_array_get_idx(gone, i);

			k8s_store__key(v, key, sizeof(key));
			json_object_object_del(s->objs, key);
			fire(s, K8S_DELETED, v, v);
		}
		json_object_put(gone);
	}
	pthread_mutex_unlock(&s->lock);
	json_object_put(keep);
}

size_t k8s_store__count(struct k8s_store *s)
{
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = json_object_object_length(s->objs);
	pthread_mutex_unlock(&s->lock);
	return n;
}

uint64_t k8s_store__generation(struct k8s_store *s)
{
	return s->gen;
}

int k8s_store__foreach(struct k8s_store *s,
		       int (*fn)(struct json_object *obj, void *ctx), void *ctx)
{
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	json_object_object_foreach(s->objs, k, v) {
		(void)k;
		ret = fn(v, ctx);
		if (ret)
			break;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}
