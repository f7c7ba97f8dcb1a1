// SPDX-License-Identifier: Apache-2.0
/*
 * agent/h2/hpack.c: RFC 7541 Appendix C vectors, and the late-join rule —
 * a decoder that attaches mid-connection reports every field either
 * exactly or as unknown, never as another field's value.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "agent/h2/hpack.h"
#include "selftests/unit/test.h"

#define MAXF 64

struct fields {
	int n;
	int unknown;
	char name[MAXF][64];
	char value[MAXF][128];
	bool unk[MAXF];
};

static void collect(void *ctx, const char *n, size_t nl, const char *v,
		    size_t vl)
{
	struct fields *f = ctx;

	if (f->n >= MAXF)
		return;
	if (!n) {
		f->unk[f->n++] = true;
		f->unknown++;
		return;
	}
	snprintf(f->name[f->n], sizeof(f->name[0]), "%.*s", (int)nl, n);
	snprintf(f->value[f->n], sizeof(f->value[0]), "%.*s", (int)vl, v);
	f->unk[f->n++] = false;
}

static size_t unhex(const char *s, uint8_t *out)
{
	size_t n = 0;
	int hi = -1;

	for (; *s; s++) {
		int v;

		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else
			continue;
		if (hi < 0) {
			hi = v;
		} else {
			out[n++] = hi << 4 | v;
			hi = -1;
		}
	}
	return n;
}

/* "name: value\n..." must equal what one block decodes to */
static bool decodes_to(struct h2_hpack *h, const char *hex, const char *want)
{
	uint8_t buf[512];
	size_t n = unhex(hex, buf);
	struct fields f = {};
	char got[2048] = "";

	if (h2_hpack__decode(h, buf, n, collect, &f))
		return false;
	for (int i = 0; i < f.n; i++) {
		size_t o = strlen(got);

		snprintf(got + o, sizeof(got) - o, "%s: %s\n",
			 f.unk[i] ? "?" : f.name[i],
			 f.unk[i] ? "?" : f.value[i]);
	}
	if (strcmp(got, want))
		fprintf(stderr, "    got:\n%s    want:\n%s", got, want);
	return !strcmp(got, want);
}

TEST(h2_hpack_rfc7541_c2_representations)
{
	struct h2_hpack *h = h2_hpack__new(true);
	struct h2_hpack_stats st;

	ASSERT_TRUE(h);
	/* C.2.1 literal with indexing, C.2.2 without, C.2.3 never, C.2.4 indexed */
	ASSERT_TRUE(decodes_to(
		h,
		"400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
		"custom-key: custom-header\n"));
	ASSERT_TRUE(decodes_to(h, "040c 2f73 616d 706c 652f 7061 7468",
			       ":path: /sample/path\n"));
	ASSERT_TRUE(decodes_to(h, "1008 7061 7373 776f 7264 0673 6563 7265 74",
			       "password: secret\n"));
	ASSERT_TRUE(decodes_to(h, "82", ":method: GET\n"));
	/* the C.2.1 entry is dynamic index 62 */
	ASSERT_TRUE(decodes_to(h, "be", "custom-key: custom-header\n"));
	h2_hpack__stats(h, &st);
	ASSERT_EQ(st.inserts, 1);
	ASSERT_EQ(st.unknown, 0);
	h2_hpack__free(h);
}

static const char *const req1 =
	":method: GET\n:scheme: http\n:path: /\n:authority: www.example.com\n";
static const char *const req2 =
	":method: GET\n:scheme: http\n:path: /\n:authority: www.example.com\ncache-control: no-cache\n";
static const char *const req3 =
	":method: GET\n:scheme: https\n:path: /index.html\n:authority: www.example.com\ncustom-key: custom-value\n";

TEST(h2_hpack_rfc7541_c3_requests_plain)
{
	struct h2_hpack *h = h2_hpack__new(true);

	ASSERT_TRUE(h);
	ASSERT_TRUE(decodes_to(
		h, "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d", req1));
	ASSERT_TRUE(decodes_to(h, "8286 84be 5808 6e6f 2d63 6163 6865", req2));
	ASSERT_TRUE(decodes_to(
		h,
		"8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
		req3));
	h2_hpack__free(h);
}

TEST(h2_hpack_rfc7541_c4_requests_huffman)
{
	struct h2_hpack *h = h2_hpack__new(true);

	ASSERT_TRUE(h);
	ASSERT_TRUE(decodes_to(h, "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
			       req1));
	ASSERT_TRUE(decodes_to(h, "8286 84be 5886 a8eb 1064 9cbf", req2));
	ASSERT_TRUE(decodes_to(
		h,
		"8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
		req3));
	h2_hpack__free(h);
}

static const char *const resp1 =
	":status: 302\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:21 GMT\nlocation: https://www.example.com\n";
static const char *const resp2 =
	":status: 307\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:21 GMT\nlocation: https://www.example.com\n";
static const char *const resp3 =
	":status: 200\ncache-control: private\ndate: Mon, 21 Oct 2013 20:13:22 GMT\nlocation: https://www.example.com\ncontent-encoding: gzip\nset-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1\n";

/* C.5/C.6 assume a 256-byte table (evictions); ours may be larger: same fields */
TEST(h2_hpack_rfc7541_c5_responses_plain)
{
	struct h2_hpack *h = h2_hpack__new(true);

	ASSERT_TRUE(h);
	ASSERT_TRUE(decodes_to(
		h,
		"4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
		resp1));
	ASSERT_TRUE(decodes_to(h, "4803 3330 37c1 c0bf", resp2));
	ASSERT_TRUE(decodes_to(
		h,
		"88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31",
		resp3));
	h2_hpack__free(h);
}

TEST(h2_hpack_rfc7541_c6_responses_huffman)
{
	struct h2_hpack *h = h2_hpack__new(true);

	ASSERT_TRUE(h);
	/* a size update to 256 first, as the RFC's setting: the same evictions */
	ASSERT_TRUE(decodes_to(h, "3fe101", ""));
	ASSERT_TRUE(decodes_to(
		h,
		"4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
		resp1));
	ASSERT_TRUE(decodes_to(h, "4883 640e ffc1 c0bf", resp2));
	ASSERT_TRUE(decodes_to(
		h,
		"88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
		resp3));
	h2_hpack__free(h);
}

TEST(h2_hpack_malformed_block_reattaches)
{
	struct h2_hpack *h = h2_hpack__new(true);
	uint8_t bad[] = { 0x80 }; /* index 0 is an error */
	uint8_t trunc[] = { 0x41, 0x0f, 'w' };
	struct fields f = {};
	struct h2_hpack_stats st;

	ASSERT_TRUE(h);
	ASSERT_TRUE(decodes_to(
		h, "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d", req1));
	ASSERT_EQ(h2_hpack__decode(h, bad, sizeof(bad), collect, &f), -EPROTO);
	ASSERT_EQ(h2_hpack__decode(h, trunc, sizeof(trunc), collect, &f),
		  -EPROTO);
	/* the entry from before the error is now "before attach": unknown */
	ASSERT_TRUE(
		decodes_to(h, "8286 84be",
			   ":method: GET\n:scheme: http\n:path: /\n?: ?\n"));
	h2_hpack__stats(h, &st);
	ASSERT_EQ(st.errors, 2);
	ASSERT_EQ(st.reattaches, 2);
	h2_hpack__free(h);
}

/* ---- late join against nghttp2's encoder ---------------------------- */

struct hlist {
	int n;
	nghttp2_nv nv[8];
	char buf[8][2][64];
};

static void mk(struct hlist *l, unsigned seed, int i)
{
	static const char *const paths[] = { "/a", "/b/c", "/api/v1/items",
					     "/x?y=1" };
	static const char *const hosts[] = { "one.example", "two.example" };
	const char *vals[8][2] = {
		{ ":method", i % 5 ? "GET" : "POST" },
		{ ":scheme", "http" },
		{ ":authority", hosts[(seed >> 3) % 2] },
		{ ":path", NULL },
		{ "traceparent", NULL },
		{ "user-agent", "test/1" },
	};
	char path[64], tp[64];

	/* a path pool so later requests reference older entries */
	if (seed % 3 == 0)
		snprintf(path, sizeof(path), "/u/%u", seed % 97);
	else
		snprintf(path, sizeof(path), "%s", paths[seed % 4]);
	snprintf(tp, sizeof(tp), "00-%08x-%04x-01", seed, i);
	vals[3][1] = path;
	vals[4][1] = tp;
	l->n = 6;
	for (int k = 0; k < l->n; k++) {
		snprintf(l->buf[k][0], 64, "%s", vals[k][0]);
		snprintf(l->buf[k][1], 64, "%s", vals[k][1]);
		l->nv[k] = (nghttp2_nv){ (uint8_t *)l->buf[k][0],
					 (uint8_t *)l->buf[k][1],
					 strlen(l->buf[k][0]),
					 strlen(l->buf[k][1]),
					 NGHTTP2_NV_FLAG_NONE };
	}
}

static void late_join(size_t enc_table, int attach_at, uint64_t *unknown,
		      uint64_t *exact_after)
{
	nghttp2_hd_deflater *def;
	struct h2_hpack *h = NULL;
	unsigned seed = 12345;

	*unknown = 0;
	*exact_after = 0;
	if (nghttp2_hd_deflate_new(&def, enc_table))
		return;
	for (int i = 0; i < 400; i++) {
		struct hlist l;
		uint8_t out[1024];
		ssize_t n;
		struct fields f = {};

		seed = seed * 1103515245 + 12345;
		mk(&l, seed >> 8, i);
		n = nghttp2_hd_deflate_hd(def, out, sizeof(out), l.nv, l.n);
		if (n < 0)
			break;
		if (i < attach_at)
			continue; /* the agent was not running yet */
		if (!h)
			h = h2_hpack__new(false);
		if (h2_hpack__decode(h, out, n, collect, &f)) {
			test__fail(__FILE__, __LINE__,
				   "block %d failed to decode", i);
			break;
		}
		if (f.n != l.n) {
			test__fail(__FILE__, __LINE__,
				   "block %d: %d fields, want %d", i, f.n, l.n);
			break;
		}
		for (int k = 0; k < l.n; k++) {
			if (f.unk[k]) {
				(*unknown)++;
				/*
				 * Long after the attach every entry referenced was
				 * inserted after it. Only a name that is never in
				 * the static table (traceparent) can stay unknown:
				 * each new entry takes its name from the previous
				 * one, whose name predates the attach.
				 */
				if (i >= attach_at + 200 && k != 4) {
					test__fail(
						__FILE__, __LINE__,
						"block %d field %s still unknown",
						i, l.buf[k][0]);
					goto out;
				}
				continue;
			}
			if (strcmp(f.name[k], l.buf[k][0]) ||
			    strcmp(f.value[k], l.buf[k][1])) {
				test__fail(
					__FILE__, __LINE__,
					"block %d field %d: WRONG %s: %s, truth %s: %s",
					i, k, f.name[k], f.value[k],
					l.buf[k][0], l.buf[k][1]);
				goto out;
			}
			if (i >= attach_at + 200)
				(*exact_after)++;
		}
	}
out:
	h2_hpack__free(h);
	nghttp2_hd_deflate_del(def);
}

TEST(h2_hpack_late_join_is_unknown_never_wrong)
{
	uint64_t unknown, exact;

	/* table 4096 (default) and 256 (heavy eviction) */
	late_join(4096, 50, &unknown, &exact);
	ASSERT_TRUE(!test__failed());
	test_log("4096: %llu unknown fields after attach, %llu exact later\n",
		 (unsigned long long)unknown, (unsigned long long)exact);
	ASSERT_TRUE(unknown > 0,
		    "the late join must meet pre-attach references");
	ASSERT_TRUE(exact > 0);
	late_join(256, 50, &unknown, &exact);
	ASSERT_TRUE(!test__failed());
	ASSERT_TRUE(exact > 0);
	/* from the start: nothing unknown at all */
	late_join(4096, 0, &unknown, &exact);
	ASSERT_TRUE(!test__failed());
	ASSERT_EQ(unknown, 0);
}

TEST(h2_hpack_late_join_literal_with_old_name_keeps_counting)
{
	/*
	 * Before attach: "x-custom: 1" inserted (62). After attach the encoder
	 * sends a literal with indexing whose *name* is index 62 ("x-custom:
	 * 2", inserting a new entry), then references both new entries.
	 */
	uint8_t pre[] = { 0x40, 8,   'x', '-', 'c', 'u',
			  's',  't', 'o', 'm', 1,   '1' };
	uint8_t blk1[] = { 0x7e, 1, '2' }; /* literal, name index 62 */
	uint8_t blk2[] = {
		0x40, 1,    'a', 1, 'b', /* new "a: b" */
		0xbe, 0xbf, 0xc0
	}; /* 62 a:b, 63 ?:2, 64 pre-attach */
	struct h2_hpack *h = h2_hpack__new(false);
	struct fields f = {};

	(void)pre;
	ASSERT_TRUE(h);
	ASSERT_EQ(h2_hpack__decode(h, blk1, sizeof(blk1), collect, &f), 0);
	ASSERT_EQ(f.n, 1);
	ASSERT_TRUE(f.unk[0]); /* the name was from before the attach */
	memset(&f, 0, sizeof(f));
	ASSERT_EQ(h2_hpack__decode(h, blk2, sizeof(blk2), collect, &f), 0);
	ASSERT_EQ(f.n, 4);
	ASSERT_STREQ(f.name[0], "a");
	ASSERT_STREQ(f.name[1], "a");
	ASSERT_STREQ(f.value[1], "b");
	ASSERT_TRUE(
		f.unk[2]); /* "x-custom: 2": inserted after attach, name unknown */
	ASSERT_TRUE(f.unk[3]); /* "x-custom: 1": from before the attach */
	h2_hpack__free(h);
}
