// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "agent/k8s/json_stream.h"

/* Kubernetes objects nest deeper than json-c's default of 32 (managedFields) */
#define JSTREAM_DEPTH 128

struct k8s_jstream {
	struct json_tokener *tok;
	size_t max;
	size_t pending; /* bytes fed into the object being assembled */
};

struct k8s_jstream *k8s_jstream__new(size_t max_object_bytes)
{
	struct k8s_jstream *js = calloc(1, sizeof(*js));

	if (!js)
		return NULL;
	js->tok = json_tokener_new_ex(JSTREAM_DEPTH);
	if (!js->tok) {
		free(js);
		return NULL;
	}
	/* RFC 8259 only (no comments, no single quotes), valid UTF-8; the
	 * next object may follow in the same buffer */
	json_tokener_set_flags(js->tok, JSON_TOKENER_STRICT |
				       JSON_TOKENER_ALLOW_TRAILING_CHARS |
				       JSON_TOKENER_VALIDATE_UTF8);
	js->max = max_object_bytes;
	return js;
}

void k8s_jstream__free(struct k8s_jstream *js)
{
	if (!js)
		return;
	json_tokener_free(js->tok);
	free(js);
}

void k8s_jstream__reset(struct k8s_jstream *js)
{
	json_tokener_reset(js->tok);
	js->pending = 0;
}

size_t k8s_jstream__pending(const struct k8s_jstream *js)
{
	return js->pending;
}

static int is_space(char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

int k8s_jstream__feed(struct k8s_jstream *js, const char *buf, size_t len,
		      k8s_jstream_fn fn, void *ctx)
{
	while (len) {
		struct json_object *obj;
		enum json_tokener_error jerr;
		size_t used, n;
		int ret;

		/* whitespace between objects is not part of any object */
		if (!js->pending && is_space(*buf)) {
			buf++;
			len--;
			continue;
		}
		/* json-c takes an int length; feed at most what the cap allows */
		n = len > (1u << 30) ? (1u << 30) : len;
		obj = json_tokener_parse_ex(js->tok, buf, (int)n);
		jerr = json_tokener_get_error(js->tok);
		if (jerr == json_tokener_continue) {
			js->pending += n;
			if (js->pending > js->max)
				return -E2BIG;
			buf += n;
			len -= n;
			continue;
		}
		if (jerr != json_tokener_success) {
			k8s_jstream__reset(js);
			return -EBADMSG;
		}
		used = json_tokener_get_parse_end(js->tok);
		js->pending += used;
		if (js->pending > js->max) {
			json_object_put(obj);
			k8s_jstream__reset(js);
			return -E2BIG;
		}
		buf += used;
		len -= used;
		k8s_jstream__reset(js);
		/* a top-level null parses as success with obj NULL: skip it */
		if (!obj)
			continue;
		ret = fn(obj, ctx);
		if (ret)
			return ret;
	}
	return 0;
}
