/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Debug socket: a unix stream socket (mode 0600) answering one command per
 * connection: "[--json] status|targets|routes|series|stats|policies\n".
 * `milometer ctl` is its client.
 */
#ifndef MM_AGENT_CTL_H
#define MM_AGENT_CTL_H

struct agent;

int ctl__listen(const char *path);
/* Serve one pending connection on the listening fd (non-blocking accept). */
void ctl__serve(struct agent *ag, int lfd);
void ctl__close(int lfd, const char *path);
/* `milometer ctl ...` */
int ctl__main(int argc, char **argv);

#endif /* MM_AGENT_CTL_H */
