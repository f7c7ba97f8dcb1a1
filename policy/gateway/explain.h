/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `milometer explain`: which HTTPRoute rule a request belongs to, and the
 * Gateway API precedence step that decided it, from manifests on disk.
 */
#ifndef MM_POLICY_EXPLAIN_H
#define MM_POLICY_EXPLAIN_H

#include <stdbool.h>
#include <stdio.h>

struct http_req;

struct explain_opts {
	const char *manifests; /* file or directory of Gateways, HTTPRoutes */
	const char *gateway;   /* NS/NAME, NULL: every Gateway merged */
	const char *listener;  /* NULL: the one on the URL's port */
	const char *method;    /* NULL: GET */
	bool verbose;          /* also the vhost's precedence list */
};

/* Add -H 'Name: value' to req. Returns 0, or -errno with a message on errs. */
int explain__add_header(struct http_req *req, const char *arg, FILE *errs);
/*
 * Prints "NAMESPACE/NAME rule N" or "unmatched" on the first line of out,
 * then the reasons. Returns 0 for an answer (matched or not), 2 for bad
 * input (message on errs).
 */
int explain__request(const struct explain_opts *o, struct http_req *req,
		     const char *url, FILE *out, FILE *errs);

#endif /* MM_POLICY_EXPLAIN_H */
