// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "agent/k8s/json_stream.h"

/* Kubernetes objects nest deeper than json-c's default of 32 (managedFields) */
#define JSTREAM_DEPTH 128

struct k8s_jstream {
	struct json_tokener *tok;
	size_t max;
	size_t pending; /* bytes fed into the object being assembled */
	/*
	 * The start of a UTF-8 character a buffer ended inside: json-c 0.16
	 * validates UTF-8 per call, so a character split across two HTTP
	 * chunks would fail the stream (found by fuzz_k8s_watch).
	 */
	unsigned char carry[4];
	size_t ncarry;
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
	json_tokener_set_flags(js->tok,
			       JSON_TOKENER_STRICT |
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

static void object_done(struct k8s_jstream *js)
{
	json_tokener_reset(js->tok);
	js->pending = 0;
}

void k8s_jstream__reset(struct k8s_jstream *js)
{
	object_done(js);
	js->ncarry = 0;
}

size_t k8s_jstream__pending(const struct k8s_jstream *js)
{
	return js->pending;
}

static int is_space(char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* Bytes of a UTF-8 character whose lead byte is C (1 if C is no lead). */
static size_t utf8_len(unsigned char c)
{
	return c >= 0xf0 && c <= 0xf7 ? 4
	       : c >= 0xe0            ? (c <= 0xef ? 3 : 1)
	       : c >= 0xc0            ? 2
				      : 1;
}

/* Bytes at the end of buf that begin a character it does not finish. */
static size_t cut_tail(const char *buf, size_t len)
{
	for (size_t k = 1; k <= 3 && k <= len; k++) {
		unsigned char c = buf[len - k];

		if (c >= 0x80 && c <= 0xbf)
			continue; /* continuation: look further back */
		return utf8_len(c) > k ? k : 0;
	}
	return 0;
}

static int feed_whole(struct k8s_jstream *js, const char *buf, size_t len,
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
		/*
		 * The API server frames objects only; json-c ends a top-level
		 * number differently when a split follows it ("2-" whole is 2
		 * and more, piecewise one bad number).
		 */
		if (!js->pending && *buf != '{')
			return -EBADMSG;
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
			object_done(js);
			return -EBADMSG;
		}
		used = json_tokener_get_parse_end(js->tok);
		js->pending += used;
		if (js->pending > js->max) {
			json_object_put(obj);
			object_done(js);
			return -E2BIG;
		}
		buf += used;
		len -= used;
		object_done(js);
		if (!obj)
			continue;
		ret = fn(obj, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

int k8s_jstream__feed(struct k8s_jstream *js, const char *buf, size_t len,
		      k8s_jstream_fn fn, void *ctx)
{
	size_t tail;
	int err;

	if (js->ncarry) {
		size_t want = utf8_len(js->carry[0]) - js->ncarry;
		size_t take = want < len ? want : len;

		memcpy(js->carry + js->ncarry, buf, take);
		js->ncarry += take;
		buf += take;
		len -= take;
		if (take < want)
			return 0;
		err = feed_whole(js, (const char *)js->carry, js->ncarry, fn,
				 ctx);
		js->ncarry = 0;
		if (err)
			return err;
	}
	tail = cut_tail(buf, len);
	err = feed_whole(js, buf, len - tail, fn, ctx);
	if (err)
		return err;
	memcpy(js->carry, buf + len - tail, tail);
	js->ncarry = tail;
	return 0;
}
