// SPDX-License-Identifier: Apache-2.0
/*
 * The watch stream's framing (agent/k8s/json_stream.c) on hostile bytes:
 * the API server's bytes arrive in HTTP chunks split anywhere, so how the
 * same bytes are split must not change which objects come out or how the
 * stream ends, and no object past the cap may be buffered.
 *
 * Input: byte 0 picks the split (its low 6 bits + 1 = the largest piece,
 * pieces vary by the following byte); the rest is the stream. It is fed
 * three ways: whole, split, and one byte at a time.
 */
#include <errno.h>
#include <json-c/json.h>

#include "agent/k8s/json_stream.h"
#include "selftests/fuzz/fuzz_util.h"

#define CAP      4096 /* a small cap, so the fuzzer reaches it */
#define MAX_OBJS 256

struct seen {
	int n;
	char *obj[MAX_OBJS];
};

static int keep(struct json_object *obj, void *ctx)
{
	struct seen *s = ctx;
	const char *t =
		json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);

	if (s->n < MAX_OBJS)
		s->obj[s->n++] = strdup(t ? t : "");
	json_object_put(obj);
	return 0;
}

/* Feeds data in pieces; returns the stream's end: 0, -EBADMSG or -E2BIG. */
static int feed(const uint8_t *data, size_t size, const uint8_t *split,
		size_t nsplit, size_t fixed, struct seen *s)
{
	struct k8s_jstream *js = k8s_jstream__new(CAP);
	size_t off = 0, k = 0;
	int err = 0;

	if (!js)
		abort();
	while (off < size && !err) {
		size_t n =
			fixed ? fixed
			      : (nsplit ? split[k++ % nsplit] % 64 + 1 : size);

		if (n > size - off)
			n = size - off;
		err = k8s_jstream__feed(js, (const char *)data + off, n, keep,
					s);
		if (k8s_jstream__pending(js) > CAP)
			abort(); /* buffered past the cap */
		off += n;
	}
	if (err && err != -EBADMSG && err != -E2BIG)
		abort(); /* documented ends only */
	k8s_jstream__free(js);
	return err;
}

static void drop(struct seen *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->obj[i]);
	s->n = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen whole = { 0 }, split = { 0 }, bytes = { 0 };
	int e_whole, e_split, e_bytes;

	if (size < 2)
		return 0;
	e_whole = feed(data + 1, size - 1, NULL, 0, 0, &whole);
	e_split = feed(data + 1, size - 1, data, 1 + data[0] % 16, 0, &split);
	e_bytes = feed(data + 1, size - 1, NULL, 0, 1, &bytes);
	/*
	 * A stream that frames cleanly whole frames the same, object for
	 * object, whatever the split. (On malformed bytes json-c's tokener
	 * itself is split-dependent: "4-0" or a byte >= 0x80 right after a
	 * value can fail whole and pass piecewise. The API server does not send
	 * those; there every way must still end in a documented error, above.)
	 */
	if (!e_whole) {
		if (e_split || e_bytes || whole.n != split.n ||
		    whole.n != bytes.n)
			abort();
		for (int i = 0; i < whole.n; i++)
			if (strcmp(whole.obj[i], split.obj[i]) ||
			    strcmp(whole.obj[i], bytes.obj[i]))
				abort();
	}
	drop(&whole);
	drop(&split);
	drop(&bytes);
	return 0;
}
