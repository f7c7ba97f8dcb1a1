// SPDX-License-Identifier: Apache-2.0
/*
 * The Kubernetes client's pure parts: watch-event framing across every
 * buffer split, the size cap, the store's replace semantics, JSON to doc
 * tree (escapes, surrogate pairs), kubeconfig reading.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "agent/k8s/config.h"
#include "agent/k8s/json_doc.h"
#include "agent/k8s/json_stream.h"
#include "agent/k8s/store.h"
#include "policy/source/doc.h"
#include "test.h"

/* Three events as the API server writes them, with the awkward parts:
 * braces and quotes inside strings, \/ and a surrogate pair, nesting, raw
 * UTF-8 of 2, 3 and 4 bytes (which a split may cut). */
static const char stream[] =
	"{\"type\":\"ADDED\",\"object\":{\"kind\":\"HTTPRoute\",\"metadata\":{\"name\":\"a}{\\\"b\",\"resourceVersion\":\"10\"},\"spec\":{\"hostnames\":[\"x\\/y\"]}}}\n"
	"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"smile\\ud83d\\ude00\",\"resourceVersion\":\"11\"},\"spec\":{\"note\":\"caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80\",\"a\":{\"b\":{\"c\":[1,2.5,true,null]}}}}}\n"
	"{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"HTTPRoute\",\"metadata\":{\"resourceVersion\":\"12\"}}}\n";

struct seen {
	char out[4][512];
	int n;
};

static int collect(struct json_object *o, void *ctx)
{
	struct seen *s = ctx;

	if (s->n < 4)
		snprintf(s->out[s->n], sizeof(s->out[0]), "%s",
			 json_object_to_json_string_ext(
				 o, JSON_C_TO_STRING_PLAIN));
	s->n++;
	json_object_put(o);
	return 0;
}

static int feed_split(struct k8s_jstream *js, const char *b, size_t len,
		      size_t step, struct seen *s)
{
	for (size_t off = 0; off < len; off += step) {
		size_t n = len - off < step ? len - off : step;
		int ret = k8s_jstream__feed(js, b + off, n, collect, s);

		if (ret)
			return ret;
	}
	return 0;
}

TEST(k8s_jstream_every_split)
{
	size_t len = strlen(stream);
	struct k8s_jstream *js = k8s_jstream__new(1 << 20);
	struct seen whole = {}, s;

	ASSERT_TRUE(js);
	ASSERT_EQ(k8s_jstream__feed(js, stream, len, collect, &whole), 0);
	ASSERT_EQ(whole.n, 3);
	/* one byte at a time */
	memset(&s, 0, sizeof(s));
	ASSERT_EQ(feed_split(js, stream, len, 1, &s), 0);
	ASSERT_EQ(s.n, 3);
	for (int i = 0; i < 3; i++)
		ASSERT_TRUE(!strcmp(s.out[i], whole.out[i]), "event %d", i);
	/* every two-piece split */
	for (size_t cut = 1; cut < len; cut++) {
		memset(&s, 0, sizeof(s));
		ASSERT_EQ(k8s_jstream__feed(js, stream, cut, collect, &s), 0);
		ASSERT_EQ(k8s_jstream__feed(js, stream + cut, len - cut,
					    collect, &s),
			  0);
		ASSERT_EQ(s.n, 3);
		for (int i = 0; i < 3; i++)
			ASSERT_TRUE(!strcmp(s.out[i], whole.out[i]),
				    "cut %zu event %d", cut, i);
		ASSERT_EQ(k8s_jstream__pending(js), 0);
	}
	/* the decoded name: a}{"b and the surrogate pair as UTF-8 */
	ASSERT_TRUE(strstr(whole.out[0], "a}{\\\"b"));
	ASSERT_TRUE(strstr(whole.out[1], "smile\xf0\x9f\x98\x80"), "%s",
		    whole.out[1]);
	ASSERT_TRUE(strstr(whole.out[1],
			   "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80"),
		    "%s", whole.out[1]);
	k8s_jstream__free(js);
}

TEST(k8s_jstream_no_newlines_and_whitespace)
{
	const char *b = "  {\"a\":1}{\"b\":2}\r\n\t{\"c\":3}";
	struct k8s_jstream *js = k8s_jstream__new(1024);
	struct seen s = {};

	ASSERT_EQ(feed_split(js, b, strlen(b), 3, &s), 0);
	ASSERT_EQ(s.n, 3);
	ASSERT_TRUE(!strcmp(s.out[2], "{\"c\":3}"));
	k8s_jstream__free(js);
}

TEST(k8s_jstream_cap_and_garbage)
{
	struct k8s_jstream *js = k8s_jstream__new(64);
	struct seen s = {};
	char big[256];

	/* an object over the cap, fed in pieces: refused before it is whole */
	snprintf(big, sizeof(big), "{\"k\":\"%0100d\"}", 7);
	ASSERT_EQ(feed_split(js, big, strlen(big), 16, &s), -E2BIG);
	ASSERT_EQ(s.n, 0);
	k8s_jstream__reset(js);
	/* and in one buffer */
	ASSERT_EQ(k8s_jstream__feed(js, big, strlen(big), collect, &s), -E2BIG);
	k8s_jstream__reset(js);
	ASSERT_EQ(k8s_jstream__feed(js, "{a:1}", 5, collect, &s), -EBADMSG);
	k8s_jstream__reset(js);
	ASSERT_EQ(k8s_jstream__feed(js, "{\"a\":1}}", 8, collect, &s),
		  -EBADMSG);
	ASSERT_EQ(s.n, 1);
	k8s_jstream__free(js);
}

struct changes {
	int added, updated, deleted;
};

static void on_change(enum k8s_change w, struct json_object *o,
		      struct json_object *old, void *ctx)
{
	struct changes *c = ctx;

	if (w == K8S_ADDED)
		c->added++;
	else if (w == K8S_UPDATED)
		c->updated++;
	else
		c->deleted++;
}

static struct json_object *obj(const char *ns, const char *name,
			       const char *uid, const char *rv)
{
	char b[512];

	snprintf(
		b, sizeof(b),
		"{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"uid\":\"%s\",\"resourceVersion\":\"%s\"}}",
		ns, name, uid, rv);
	return json_tokener_parse(b);
}

TEST(k8s_store_replace_semantics)
{
	struct changes c = {};
	struct k8s_store *s = k8s_store__new(on_change, &c);
	struct json_object *l1 = json_object_new_array(), *l2, *l3, *o;
	uint64_t g;

	json_object_array_add(l1, obj("a", "x", "u1", "5"));
	json_object_array_add(l1, obj("a", "y", "u2", "6"));
	json_object_array_add(l1, obj("b", "x", "u3", "7"));
	k8s_store__replace(s, l1);
	ASSERT_EQ(c.added, 3);
	ASSERT_EQ(k8s_store__count(s), 3);
	/* a relist with the same objects changes nothing */
	g = k8s_store__generation(s);
	k8s_store__replace(s, l1);
	ASSERT_EQ(c.added + c.updated + c.deleted, 3);
	ASSERT_EQ(k8s_store__generation(s), g);
	/* a relist that lost a/y, changed b/x and re-created a/x */
	l2 = json_object_new_array();
	json_object_array_add(l2, obj("a", "x", "u9", "9"));
	json_object_array_add(l2, obj("b", "x", "u3", "8"));
	k8s_store__replace(s, l2);
	ASSERT_EQ(c.updated, 1);
	ASSERT_EQ(c.deleted, 2); /* a/y gone, old a/x replaced */
	ASSERT_EQ(c.added, 4);
	ASSERT_EQ(k8s_store__count(s), 2);
	/* watch events */
	o = obj("c", "z", "u4", "10");
	k8s_store__upsert(s, o);
	k8s_store__upsert(s, o); /* replayed: no change */
	ASSERT_EQ(c.added, 5);
	k8s_store__delete(s, o);
	k8s_store__delete(s, o);
	ASSERT_EQ(c.deleted, 3);
	json_object_put(o);
	/* CRD removed: an empty relist empties the store */
	l3 = json_object_new_array();
	k8s_store__replace(s, l3);
	ASSERT_EQ(k8s_store__count(s), 0);
	ASSERT_EQ(c.deleted, 5);
	json_object_put(l1);
	json_object_put(l2);
	json_object_put(l3);
	k8s_store__free(s);
}

TEST(k8s_json_doc_tree)
{
	struct json_object *o = json_tokener_parse(
		"{\"metadata\":{\"name\":\"a\\/b\\u00e9\\ud83d\\ude00\"},\"n\":-3,\"f\":1.5,\"t\":true,\"z\":null,\"l\":[\"x\",{\"k\":\"v\"}]}");
	struct doc_node *d;
	const struct doc_node *l;

	ASSERT_TRUE(o);
	d = k8s_json_doc__convert(o, "k8s test");
	ASSERT_TRUE(d);
	ASSERT_TRUE(!strcmp(doc__str(d, "metadata.name"),
			    "a/b\xc3\xa9\xf0\x9f\x98\x80"));
	ASSERT_EQ(doc__get(d, "n")->kind, DOC_INT);
	ASSERT_EQ(doc__get(d, "n")->i, -3);
	ASSERT_EQ(doc__get(d, "f")->kind, DOC_DOUBLE);
	ASSERT_EQ(doc__get(d, "t")->kind, DOC_BOOL);
	ASSERT_EQ(doc__get(d, "z")->kind, DOC_NULL);
	l = doc__get(d, "l");
	ASSERT_EQ(l->kind, DOC_LIST);
	ASSERT_EQ(l->list.n, 2);
	ASSERT_TRUE(!strcmp(doc__str(l->list.items[1], "k"), "v"));
	ASSERT_TRUE(!strcmp(d->file, "k8s test"));
	/* key order is the document's */
	ASSERT_TRUE(!strcmp(d->map.keys[0], "metadata"));
	ASSERT_TRUE(!strcmp(d->map.keys[5], "l"));
	doc__free(d);
	json_object_put(o);
}

TEST(k8s_kubeconfig)
{
	char path[512], err[512], tok[64];
	struct k8s_config *c = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/kc", test__tmpdir());
	f = fopen(path, "w");
	ASSERT_TRUE(f);
	/* "-----BEGIN X-----\n" in base64 */
	fprintf(f,
		"apiVersion: v1\nkind: Config\ncurrent-context: b\n"
		"clusters:\n- name: c1\n  cluster: {server: 'https://10.0.0.1:6443/', certificate-authority-data: LS0tLS1CRUdJTiBYLS0tLS0K}\n"
		"- name: c2\n  cluster: {server: https://h:1, certificate-authority: ca.pem}\n"
		"users:\n- name: u1\n  user: {token: abc}\n- name: u2\n  user: {client-certificate: c.crt, client-key: /k.key}\n"
		"contexts:\n- name: a\n  context: {cluster: c2, user: u2}\n- name: b\n  context: {cluster: c1, user: u1}\n");
	fclose(f);
	ASSERT_EQ(k8s_config__load(path, &c, err, sizeof(err)), 0);
	ASSERT_TRUE(!strcmp(c->server, "https://10.0.0.1:6443"), "%s",
		    c->server);
	ASSERT_EQ(c->ca_pem_len, 18);
	ASSERT_TRUE(!strcmp(c->ca_pem, "-----BEGIN X-----\n"));
	k8s_config__token(c, false, tok, sizeof(tok));
	ASSERT_TRUE(!strcmp(tok, "abc"));
	k8s_config__free(c);

	f = fopen(path, "w");
	fprintf(f,
		"current-context: a\nclusters:\n- name: c2\n  cluster: {server: https://h:1, certificate-authority: ca.pem}\n"
		"users:\n- name: u2\n  user: {client-certificate: c.crt, client-key: /k.key}\n"
		"contexts:\n- name: a\n  context: {cluster: c2, user: u2}\n");
	fclose(f);
	ASSERT_EQ(k8s_config__load(path, &c, err, sizeof(err)), 0);
	/* relative paths are relative to the kubeconfig */
	ASSERT_TRUE(strstr(c->ca_file, "/ca.pem") && c->ca_file[0] == '/');
	ASSERT_TRUE(!strcmp(c->key_file, "/k.key"));
	k8s_config__free(c);

	f = fopen(path, "w");
	fprintf(f,
		"current-context: a\nclusters:\n- name: c\n  cluster: {server: https://h:1}\n"
		"users:\n- name: u\n  user: {exec: {command: aws}}\n"
		"contexts:\n- name: a\n  context: {cluster: c, user: u}\n");
	fclose(f);
	ASSERT_EQ(k8s_config__load(path, &c, err, sizeof(err)), -ENOTSUP);
	ASSERT_TRUE(strstr(err, "exec"));
	ASSERT_EQ(k8s_config__load("/nonexistent/kc", &c, err, sizeof(err)) < 0,
		  1);
}

TEST(k8s_token_file_reread)
{
	char dir[512], p[600], tok[64];
	struct k8s_config *c = NULL;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s", test__tmpdir());
	snprintf(p, sizeof(p), "%s/kc", dir);
	f = fopen(p, "w");
	fprintf(f,
		"current-context: a\nclusters:\n- name: c\n  cluster: {server: https://h:1}\n"
		"users:\n- name: u\n  user: {tokenFile: tok}\n"
		"contexts:\n- name: a\n  context: {cluster: c, user: u}\n");
	fclose(f);
	snprintf(p, sizeof(p), "%s/tok", dir);
	f = fopen(p, "w");
	fprintf(f, "one\n");
	fclose(f);
	snprintf(p, sizeof(p), "%s/kc", dir);
	ASSERT_EQ(k8s_config__load(p, &c, NULL, 0), 0);
	k8s_config__token(c, false, tok, sizeof(tok));
	ASSERT_TRUE(!strcmp(tok, "one"), "%s", tok);
	snprintf(p, sizeof(p), "%s/tok", dir);
	f = fopen(p, "w");
	fprintf(f, "two");
	fclose(f);
	/* within the minute the cached token stays; a 401 forces a re-read */
	k8s_config__token(c, false, tok, sizeof(tok));
	ASSERT_TRUE(!strcmp(tok, "one"));
	k8s_config__token(c, true, tok, sizeof(tok));
	ASSERT_TRUE(!strcmp(tok, "two"));
	k8s_config__free(c);
}
