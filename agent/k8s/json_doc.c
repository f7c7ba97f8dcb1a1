// SPDX-License-Identifier: Apache-2.0
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "agent/k8s/json_doc.h"
#include "policy/source/doc.h"

static struct doc_node *conv(struct json_object *o, const char *label,
			     int depth)
{
	struct doc_node *n;

	if (depth > DOC_MAX_DEPTH)
		return NULL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->file = label;
	switch (json_object_get_type(o)) {
	case json_type_null:
		n->kind = DOC_NULL;
		break;
	case json_type_boolean:
		n->kind = DOC_BOOL;
		n->b = json_object_get_boolean(o);
		break;
	case json_type_int:
		n->kind = DOC_INT;
		n->i = json_object_get_int64(o);
		break;
	case json_type_double:
		n->kind = DOC_DOUBLE;
		n->d = json_object_get_double(o);
		break;
	case json_type_string:
		n->kind = DOC_STRING;
		n->str.len = json_object_get_string_len(o);
		n->str.s = malloc(n->str.len + 1);
		if (!n->str.s)
			goto fail;
		/* \u0000 may sit inside: copy by length */
		memcpy(n->str.s, json_object_get_string(o), n->str.len);
		n->str.s[n->str.len] = 0;
		break;
	case json_type_array: {
		size_t cnt = json_object_array_length(o);

		n->kind = DOC_LIST;
		n->list.items = calloc(cnt ? cnt : 1, sizeof(*n->list.items));
		if (!n->list.items)
			goto fail;
		for (size_t i = 0; i < cnt; i++) {
			n->list.items[i] = conv(json_object_array_get_idx(o, i),
						label, depth + 1);
			if (!n->list.items[i])
				goto fail;
			n->list.n++;
		}
		break;
	}
	case json_type_object: {
		size_t cnt = json_object_object_length(o);

		n->kind = DOC_MAP;
		n->map.keys = calloc(cnt ? cnt : 1, sizeof(*n->map.keys));
		n->map.vals = calloc(cnt ? cnt : 1, sizeof(*n->map.vals));
		if (!n->map.keys || !n->map.vals)
			goto fail;
		json_object_object_foreach(o, k, v) {
			size_t i = n->map.n;

			n->map.keys[i] = strdup(k);
			n->map.vals[i] = v ? conv(v, label, depth + 1)
					   : conv(NULL, label, depth + 1);
			if (!n->map.keys[i] || !n->map.vals[i]) {
				free(n->map.keys[i]);
				doc__free(n->map.vals[i]);
				goto fail;
			}
			n->map.n++;
		}
		break;
	}
	}
	return n;
fail:
	doc__free(n);
	return NULL;
}

struct doc_node *k8s_json_doc__convert(struct json_object *o, const char *label)
{
	return conv(o, label, 0);
}
