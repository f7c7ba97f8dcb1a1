/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tenant of the object a series is bound to, for --otlp-tenant-from:
 * "namespace" makes the object's namespace the tenant; "namespace-label:KEY"
 * the value of label KEY on its Namespace, read from the API's Namespace
 * watch (tenants__refresh before each export). An object without a
 * namespace, or whose Namespace lacks the label, has no tenant.
 */
#ifndef MM_AGENT_TENANTS_H
#define MM_AGENT_TENANTS_H

#include <stdbool.h>
#include <stddef.h>

struct k8s_api;
struct tenants;

struct tenants *tenants__new(const char *from);
void tenants__free(struct tenants *t);
/* KEY of "namespace-label:KEY", NULL for "namespace". */
const char *tenants__label(const char *from);
void tenants__refresh(struct tenants *t, struct k8s_api *api);
/* An otlp_tenant_fn (exporter/otlp_tenancy.h); ctx is the tenants. */
bool tenants__of_subject(void *ctx, const char *subject, char *buf, size_t len);

#endif /* MM_AGENT_TENANTS_H */
