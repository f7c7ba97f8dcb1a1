/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keeps the kernel's route table equal to the manifests: compile, write
 * generation N+1 beside N, flip mm_config.route_gen, delete N's keys a
 * grace period later (a request parsed just before the flip may still be
 * looking them up). Each request is attributed by exactly one generation,
 * so an update under load neither loses nor double-counts a request.
 * Tables of recent generations stay available to attribute events that
 * were produced before the flip and to finish deferred requests.
 */
#ifndef MM_AGENT_ROUTE_SYNC_H
#define MM_AGENT_ROUTE_SYNC_H

#include <stdint.h>
#include <stdio.h>

struct milometer_bpf;
struct route_table;
struct manifest_source;

struct route_sync;

struct route_sync *route_sync__new(struct milometer_bpf *skel, const char *dir,
				   const char *gateway);
void route_sync__free(struct route_sync *rs);
/*
 * Read Gateways and HTTPRoutes from src (the Kubernetes API source)
 * instead of the directory; a new table is built when its generation
 * changes. An object that fails validation is skipped with its reason,
 * the others keep working. Call before route_sync__load().
 */
void route_sync__set_source(struct route_sync *rs, struct manifest_source *src);
/*
 * The directory's own manifests source, read by its owner (the agent's
 * contract) before each route_sync__poll(): the table is rebuilt when its
 * generation moves, and the files are parsed once for both. Without one,
 * the directory is fingerprinted and read here. Call before
 * route_sync__load().
 */
void route_sync__share_dir_source(struct route_sync *rs,
				  struct manifest_source *src);
/*
 * Socket port of a Gateway listener port: --listener-port's mapping first,
 * else the targetPort of the Gateway's Service (in the manifests or the
 * API), else the listener port itself. Applied at the next install.
 */
int route_sync__map_listener_port(struct route_sync *rs, uint16_t listener,
				  uint16_t sock);
/* Load and install the manifests now. -errno with the reason in err. */
int route_sync__load(struct route_sync *rs, char *err, size_t errlen);
/*
 * Reload when the manifests changed; retire old generations. Returns 1 when
 * a new table was installed, 0 when nothing changed, -errno when the new
 * manifests were rejected (the old table stays active; see last_error).
 */
int route_sync__poll(struct route_sync *rs, uint64_t now_ns);
/*
 * The gateway slot of Gateway ns/name, a new one (from 1) the first time:
 * processes of its pods carry it (mm_target.gw) and the next poll builds
 * its part of the table. 0 when it is the --gateway Gateway; -ENOSPC past
 * MM_GW_SLOTS Gateways.
 */
int route_sync__gateway_slot(struct route_sync *rs, const char *ns,
			     const char *name);
/* The table of generation gen, NULL if retired. */
const struct route_table *route_sync__table(const struct route_sync *rs,
					    uint32_t gen);
const struct route_table *route_sync__current(const struct route_sync *rs);
/* route_sync__table() in the shape aggregate__new() takes (ctx: the rs). */
const struct route_table *route_sync__table_fn(void *rs, uint32_t gen);
const char *route_sync__last_error(const struct route_sync *rs);
uint64_t route_sync__reloads(const struct route_sync *rs);
/* Files or objects the latest manifests left out (each logged with why). */
size_t route_sync__rejected_objects(const struct route_sync *rs);
/* HTTPRoute rules the latest manifests dropped alone (each logged with why). */
size_t route_sync__dropped_rules(const struct route_sync *rs);
void route_sync__dump(const struct route_sync *rs, FILE *out, int json);

#endif /* MM_AGENT_ROUTE_SYNC_H */
