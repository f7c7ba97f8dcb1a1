/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Framing of a watch stream: the API server writes JSON objects back to
 * back (apimachinery's jsonFramer; a "\n" after each is a courtesy, not a
 * frame), and HTTP chunks split them anywhere, inside a UTF-8 character
 * too. json-c's incremental tokener reassembles each object across any
 * buffer split (a cut character is carried to the next feed, since json-c
 * validates UTF-8 per call); a top-level value that is not an object is
 * -EBADMSG at once; an object
 * larger than the cap ends the stream with -E2BIG instead of growing
 * memory without bound.
 */
#ifndef MM_AGENT_K8S_JSON_STREAM_H
#define MM_AGENT_K8S_JSON_STREAM_H

#include <stddef.h>

struct json_object;
struct k8s_jstream;

/* Called for each complete top-level value; it owns obj (json_object_put). */
typedef int (*k8s_jstream_fn)(struct json_object *obj, void *ctx);

struct k8s_jstream *k8s_jstream__new(size_t max_object_bytes);
void k8s_jstream__free(struct k8s_jstream *js);
/* Forget a partial object (a new stream starts). */
void k8s_jstream__reset(struct k8s_jstream *js);
/*
 * Feed bytes. Returns 0, -EBADMSG for bytes that are not JSON, -E2BIG for
 * an object over the cap, or the first non-zero return of fn (which stops
 * the feed).
 */
int k8s_jstream__feed(struct k8s_jstream *js, const char *buf, size_t len,
		      k8s_jstream_fn fn, void *ctx);
/* Bytes of the object being assembled (0 between objects). */
size_t k8s_jstream__pending(const struct k8s_jstream *js);

#endif /* MM_AGENT_K8S_JSON_STREAM_H */
