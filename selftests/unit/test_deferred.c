// SPDX-License-Identifier: Apache-2.0
/* agent/pipeline/deferred.c: in-flight deferred requests never share an entry. */
#include <stdlib.h>

#include "agent/pipeline/deferred.h"
#include "selftests/unit/test.h"

TEST(deferred_many_in_flight_never_collide)
{
	struct deferred_tab *t = deferred__new();
	const int n = 50000;

	ASSERT_TRUE(t);
	/* connection ids as BPF makes them: cpu << 48 | counter */
	for (int i = 0; i < n; i++) {
		struct deferred d = {
			.conn_id = ((uint64_t)(i & 1) << 48) | (i / 2 + 1),
			.seq = i % 7,
			.route_id = i,
			.at_ns = 1,
		};

		ASSERT_EQ(deferred__put(t, &d), 0);
	}
	ASSERT_EQ(deferred__count(t), n);
	for (int i = 0; i < n; i++) {
		const struct deferred *d = deferred__get(
			t, ((uint64_t)(i & 1) << 48) | (i / 2 + 1), i % 7);

		ASSERT_TRUE(d && d->route_id == (uint32_t)i, "entry %d", i);
	}
	/* delete every other one: the rest stay reachable (backward shift) */
	for (int i = 0; i < n; i += 2)
		deferred__del(t, ((uint64_t)(i & 1) << 48) | (i / 2 + 1),
			      i % 7);
	ASSERT_EQ(deferred__count(t), n / 2);
	for (int i = 0; i < n; i++) {
		const struct deferred *d = deferred__get(
			t, ((uint64_t)(i & 1) << 48) | (i / 2 + 1), i % 7);

		bool deleted = !(i & 1);

		ASSERT_TRUE(deleted == !d, "entry %d", i);
	}
	deferred__free(t);
}

TEST(deferred_replace_and_expire)
{
	struct deferred_tab *t = deferred__new();
	struct deferred a = {
		.conn_id = 5, .seq = 1, .route_id = 1, .at_ns = 100
	};
	struct deferred b = {
		.conn_id = 6, .seq = 1, .route_id = 2, .at_ns = 900
	};

	ASSERT_EQ(deferred__put(t, &a), 0);
	a.route_id = 3;
	ASSERT_EQ(deferred__put(t, &a), 0);
	ASSERT_EQ(deferred__count(t), 1);
	ASSERT_EQ(deferred__get(t, 5, 1)->route_id, 3);
	ASSERT_EQ(deferred__put(t, &b), 0);
	ASSERT_EQ(deferred__expire(t, 1000, 500), 1);
	ASSERT_TRUE(!deferred__get(t, 5, 1));
	ASSERT_TRUE(deferred__get(t, 6, 1));
	deferred__free(t);
}
