// SPDX-License-Identifier: Apache-2.0
/*
 * Mutated manifests (bytes flipped, lines dropped or duplicated) must never
 * crash the reader, the contract or the engine, and must never disturb an
 * untouched good object in the same directory. Deterministic: a fixed
 * xorshift seed, so a failure reproduces.
 */
#include "policy/model/metric_store.h"
#include "policy/contract/policy_engine.h"
#include "selftests/unit/test.h"
#include "selftests/unit/test_contract_util.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf;

	if (!f)
		return NULL;
	buf = calloc(1, 1 << 16);
	*len = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
	fclose(f);
	return buf;
}

static void mutate(char *buf, size_t *len)
{
	static const char noise[] = ":-[]{}'\"#&*!|>% \n\tab01.";
	int kind = next_rand() % 4;

	if (!*len)
		return;
	if (kind == 0) { /* replace a byte */
		buf[next_rand() % *len] =
			noise[next_rand() % (sizeof(noise) - 1)];
	} else if (kind == 1) { /* drop a byte */
		size_t at = next_rand() % *len;

		memmove(buf + at, buf + at + 1, *len - at);
		(*len)--;
	} else if (kind == 2 && *len < (1 << 15)) { /* duplicate a span */
		size_t at = next_rand() % *len, n = next_rand() % 40;

		if (at + n > *len)
			n = *len - at;
		memmove(buf + at + n, buf + at, *len - at);
		*len += n;
	} else { /* truncate */
		*len = next_rand() % *len;
	}
	buf[*len] = 0;
}

TEST(contract_mutated_manifests_never_crash)
{
	static const char *const seeds[] = {
		SEED_TWINS_DIR "/seed-complete-metricdefinition.yaml",
		SEED_TWINS_DIR
		"/seed-complete-metricpolicy-resourcefields.yaml",
		SEED_TWINS_DIR "/seed-complete-metricpolicy-dataplane.yaml",
		SEED_DIR
		"/seed-scenario-upstream-request-count-metricpolicy.yaml",
		SEED_DIR "/extra-httproute-info-metricpolicy.yaml",
		ROUTES,
	};
	const char *dir = test__tmpdir();
	struct cel_attr a[] = {
		{ "k8s.httproute.name", "checkout" },
		{ "k8s.namespace.name", "demo" },
	};
	int iterations = 0;

	ASSERT_EQ(
		tc_copy(SEED_DIR
			"/seed-scenario-condition-status-metricdefinition.yaml",
			dir, "00-good.yaml"),
		0);
	for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++) {
		size_t len;
		char *orig = slurp(seeds[s], &len);

		ASSERT_TRUE(orig);
		for (int i = 0; i < 60; i++) {
			char *buf = calloc(1, 1 << 16);
			size_t l = len;
			struct mstore *st;
			struct policy_engine *e;
			struct pe_binding *b;
			struct tc_ctx t;
			int rounds = 1 + next_rand() % 4;

			memcpy(buf, orig, len);
			for (int r = 0; r < rounds; r++)
				mutate(buf, &l);
			tc_write(dir, "50-mutated.yaml", buf);
			free(buf);
			ASSERT_EQ(tc_open1(&t, dir), 0);
			ASSERT_STREQ(
				tc_status(&t, "MetricDefinition",
					  "gateway-httproute-condition-status",
					  COND_ACCEPTED),
				"True");
			st = mstore__new(NULL);
			e = policy_engine__new(st, t.c);
			ASSERT_TRUE(policy_engine__sync(e, t.src) >= 0);
			policy_engine__collect_resource_fields(e, 1);
			mstore__lock(st);
			if (policy_engine__bind(
				    e, "envoy.cluster.upstream_rq_time", a, 2,
				    &b) > 0) {
				pe_binding__record(b, 5, 1);
				pe_binding__free(b);
			}
			mstore__unlock(st);
			policy_engine__free(e);
			mstore__free(st);
			tc_close(&t);
			iterations++;
		}
		free(orig);
	}
	test_log("%d mutated manifests loaded\n", iterations);
}
