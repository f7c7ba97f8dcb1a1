/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's periodic reload in one call: re-read the manifest source, and
 * when it changed rebuild the contract and the policy engine. Data-path
 * bindings made before are then stale (pe_binding__generation() differs
 * from policy_engine__generation()) and must be bound again.
 */
#ifndef MM_POLICY_CONTRACT_RELOAD_H
#define MM_POLICY_CONTRACT_RELOAD_H

struct manifest_source;
struct contract;
struct policy_engine;

/*
 * 1 when something changed, 0 when not, -errno when the source failed (the
 * previous contract and engine stay in effect; the failure shows in the
 * contract's errors on the next successful load and in the return value).
 * engine may be NULL (offline use). The engine is synced with its store's
 * lock held (the data path records into bindings under that lock): call
 * without holding it; the manifests are read outside it.
 */
int contract__reload(struct manifest_source *src, struct contract *c,
		     struct policy_engine *engine);

#endif /* MM_POLICY_CONTRACT_RELOAD_H */
