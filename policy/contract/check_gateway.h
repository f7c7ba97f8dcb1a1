/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `milometer check` for the objects the route table is built from:
 * Gateways, HTTPRoutes and Namespaces, read exactly as the agent reads them
 * (gateway_api__add_doc(), one object at a time, so one bad object is
 * reported alone), with the status a conforming Gateway API controller
 * would write:
 *
 *   Gateway    Accepted True Accepted | False Invalid
 *   Namespace  Accepted True Accepted | False Invalid
 *   HTTPRoute  per parentRef (status.parents[]):
 *              Accepted True Accepted | False NoMatchingParent,
 *                NotAllowedByListeners, NoMatchingListenerHostname,
 *                UnsupportedValue
 *              ResolvedRefs True ResolvedRefs | False InvalidKind,
 *                RefNotPermitted, BackendNotFound
 *              PartiallyInvalid True UnsupportedValue "Dropped Rule N: ..."
 *              when some rules are invalid and dropped (the others count)
 *
 * What manifests alone cannot decide is a warning, not a rejection: a
 * parentRef to a Gateway when the manifests hold no Gateway at all, a
 * backendRef when they hold no Service, a cross-namespace backendRef when
 * they hold no ReferenceGrant. Once the manifests carry that kind, a
 * missing object is the Gateway API's False condition.
 *
 * Objects of other kinds (Deployments, ConfigMaps...) are listed as
 * skipped, with their file:line.
 */
#ifndef MM_POLICY_CHECK_GATEWAY_H
#define MM_POLICY_CHECK_GATEWAY_H

struct contract;
struct manifest_source;

/* Adds one contract object per Gateway, HTTPRoute, Namespace. 0 or -ENOMEM. */
int check_gateway__validate(const struct manifest_source *src,
			    struct contract *c);

#endif /* MM_POLICY_CHECK_GATEWAY_H */
