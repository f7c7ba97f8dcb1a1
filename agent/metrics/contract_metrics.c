// SPDX-License-Identifier: Apache-2.0
/* milometer.contract.objects: see contract_metrics.h. */
#include "policy/model/metric_store.h"
#include "policy/contract/contract.h"
#include "agent/metrics/contract_metrics.h"

struct set_ctx {
	struct mstore *s;
	int id;
	uint64_t now;
};

static void count(void *ctx, const char *kind, const char *type,
		  const char *status, const char *reason, uint64_t n)
{
	struct set_ctx *x = ctx;
	struct mlabel l[] = {
		{ "kind", kind },
		{ "type", type },
		{ "status", status },
		{ "reason", reason ? reason : "" },
	};
	struct mseries *se = mstore__series(x->s, x->id, l, 4);

	if (se)
		mseries__set(se, n, x->now);
}

void contract_metrics__set(struct contract *c, struct mstore *s, int id,
			   uint64_t now_ns)
{
	struct set_ctx x = { s, id, now_ns };

	if (c)
		contract__condition_counts(c, count, &x);
}
