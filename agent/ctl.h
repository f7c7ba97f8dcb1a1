/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Debug socket: a unix stream socket (mode 0600) answering one command per
 * connection: "[--json] status|targets|routes|series|stats|policies\n".
 * `milometer ctl` is its client. Served on the agent's event loop without
 * ever blocking it (see ctl.c): a slow or stuck client cannot stall the
 * ring-buffer drain.
 */
#ifndef MM_AGENT_CTL_H
#define MM_AGENT_CTL_H

#include <stdint.h>

struct agent;
struct ctl;

/* Listen on path; NULL after printing what went wrong. */
struct ctl *ctl__open(const char *path);
/* Register the listening socket with the event loop's epoll fd. */
int ctl__attach(struct ctl *c, int ep);
/* An epoll event on fd (the listening socket or a client); others ignored. */
void ctl__event(struct ctl *c, struct agent *ag, int fd, unsigned events);
/* Drop clients past their time (call from the periodic tick). */
void ctl__expire(struct ctl *c, uint64_t mono_ns);
void ctl__close(struct ctl *c);
/* `milometer ctl ...` */

#endif /* MM_AGENT_CTL_H */
