// SPDX-License-Identifier: Apache-2.0
/* UUIDv5 for hand-written objects: see contract_uid.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/contract/contract_uid.h"

static uint32_t rol(uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

static void sha1_block(uint32_t h[5], const uint8_t *p)
{
	uint32_t w[80], a, b, c, d, e;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
	for (int i = 0; i < 80; i++) {
		uint32_t f, k, t;

		if (i < 20)
			f = (b & c) | (~b & d), k = 0x5a827999;
		else if (i < 40)
			f = b ^ c ^ d, k = 0x6ed9eba1;
		else if (i < 60)
			f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
		else
			f = b ^ c ^ d, k = 0xca62c1d6;
		t = rol(a, 5) + f + e + k + w[i];
		e = d, d = c, c = rol(b, 30), b = a, a = t;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

void contract_uid__sha1(const void *data, size_t len, uint8_t out[20])
{
	uint32_t h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
			  0xc3d2e1f0 };
	const uint8_t *p = data;
	uint8_t tail[128] = { 0 };
	size_t full = len / 64 * 64, rest = len - full, tlen;
	uint64_t bits = (uint64_t)len * 8;

	for (size_t i = 0; i < full; i += 64)
		sha1_block(h, p + i);
	memcpy(tail, p + full, rest);
	tail[rest] = 0x80;
	tlen = rest + 1 + 8 <= 64 ? 64 : 128;
	for (int i = 0; i < 8; i++)
		tail[tlen - 1 - i] = (uint8_t)(bits >> (8 * i));
	for (size_t i = 0; i < tlen; i += 64)
		sha1_block(h, tail + i);
	for (int i = 0; i < 5; i++) {
		out[4 * i] = h[i] >> 24;
		out[4 * i + 1] = h[i] >> 16;
		out[4 * i + 2] = h[i] >> 8;
		out[4 * i + 3] = h[i];
	}
}

static void parse_uuid(const char *s, uint8_t out[16])
{
	for (int i = 0, j = 0; s[i] && j < 16; i++) {
		if (s[i] == '-')
			continue;
		sscanf(s + i, "%2hhx", &out[j++]);
		i++;
	}
}

void contract_uid__derive(const char *api_version, const char *kind,
			  const char *ns, const char *name, char out[37])
{
	const char *slash = api_version ? strchr(api_version, '/') : NULL;
	size_t glen = slash ? (size_t)(slash - api_version) : 0;
	size_t cap = 16 + glen + strlen(kind ? kind : "") +
		     strlen(ns ? ns : "") + strlen(name ? name : "") + 4;
	uint8_t *buf = malloc(cap), hash[20], u[16];
	int n;

	if (!buf) {
		snprintf(out, 37, "00000000-0000-5000-8000-000000000000");
		return;
	}
	parse_uuid(CONTRACT_UID_NAMESPACE, buf);
	/* core-group objects ("v1") have no group part */
	n = snprintf((char *)buf + 16, cap - 16, "%.*s/%s/%s/%s", (int)glen,
		     api_version ? api_version : "", kind ? kind : "",
		     ns ? ns : "", name ? name : "");
	contract_uid__sha1(buf, 16 + (size_t)n, hash);
	free(buf);
	memcpy(u, hash, 16);
	u[6] = (u[6] & 0x0f) | 0x50; /* version 5 */
	u[8] = (u[8] & 0x3f) | 0x80; /* RFC 4122 variant */
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
}
