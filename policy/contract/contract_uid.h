/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stable metadata.uid for objects written by hand. The API server gives
 * every object a random UUID; manifests on disk usually have none, yet
 * policies label series with string(resource.metadata.uid) and the seed
 * marks that label required. We derive a UUIDv5 (RFC 4122, SHA-1, by
 * libuuid's uuid_generate_sha1()) in our
 * own namespace from "<apiGroup>/<Kind>/<namespace>/<name>", so the same
 * object gets the same uid on every node and after every restart, and a
 * uid taken from the API server (when the source becomes the API) is kept.
 */
#ifndef MM_POLICY_CONTRACT_UID_H
#define MM_POLICY_CONTRACT_UID_H

#include <stddef.h>
#include <stdint.h>

/* Namespace UUID of milometer-derived uids. */
#define CONTRACT_UID_NAMESPACE "6f1b8c9e-3a4d-5e2f-8b7a-0c1d2e3f4a5b"

/* out gets 36 characters and a NUL. */
void contract_uid__derive(const char *api_version, const char *kind,
			  const char *ns, const char *name, char out[37]);

#endif /* MM_POLICY_CONTRACT_UID_H */
