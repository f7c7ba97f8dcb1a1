/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which processes are "the proxy": by executable name or path, by pid (and
 * its descendants), by cgroup v2 path. BPF keeps the set current as
 * processes fork, exec and exit; user space seeds it and re-scans /proc
 * periodically to catch anything that raced the seeding.
 */
#ifndef MM_AGENT_TARGETS_H
#define MM_AGENT_TARGETS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct milometer_bpf;
struct agent_opts;

/* Fill mm_target_comms/mm_target_cgroups and seed mm_targets from /proc. */
int targets__init(struct milometer_bpf *skel, const struct agent_opts *o);
/*
 * Trace the processes of the cgroup v2 directory dir (cgroup id id), now
 * and as they exec, in the route table of gateway slot gw (0: the default
 * one). Returns the processes added or -errno.
 */
int targets__add_cgroup(struct milometer_bpf *skel, const char *dir,
			uint64_t id, uint32_t gw);
/*
 * Stop taking new processes of cgroup id (a pod that is gone): its entry
 * leaves mm_target_cgroups, which holds 256. Returns 0 or -errno.
 */
int targets__remove_cgroup(struct milometer_bpf *skel, uint64_t id);
/* Re-scan /proc; returns the number of target processes. */
int targets__rescan(struct milometer_bpf *skel, const struct agent_opts *o);
/* Print "PID SOURCE COMM" lines (or a JSON array). */
void targets__dump(struct milometer_bpf *skel, FILE *out, int json);
/* Count of processes in mm_targets. */
int targets__count(struct milometer_bpf *skel);

#endif /* MM_AGENT_TARGETS_H */
