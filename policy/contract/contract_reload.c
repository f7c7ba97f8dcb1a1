// SPDX-License-Identifier: Apache-2.0
/* Reload source, contract and engine together: see contract_reload.h. */
#include "policy/model/metric_store.h"
#include "policy/contract/contract.h"
#include "policy/contract/contract_reload.h"
#include "policy/source/manifest_source.h"
#include "policy/contract/policy_engine.h"

int contract__reload(struct manifest_source *src, struct contract *c,
		     struct policy_engine *engine)
{
	int changed = manifest_source__reload(src);
	int err;

	if (changed < 0)
		return changed;
	if (changed) {
		err = contract__load(c, src);
		if (err)
			return err;
	}
	if (engine) {
		/* also catches a first sync that never happened */
		struct mstore *st = policy_engine__store(engine);

		mstore__lock(st);
		err = policy_engine__sync(engine, src);
		mstore__unlock(st);
		if (err < 0)
			return err;
		changed |= err;
	}
	return changed ? 1 : 0;
}
