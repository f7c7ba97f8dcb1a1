// SPDX-License-Identifier: Apache-2.0
/* UUIDv5 for hand-written objects: see contract_uid.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uuid/uuid.h>

#include "policy/contract/contract_uid.h"

void contract_uid__derive(const char *api_version, const char *kind,
			  const char *ns, const char *name, char out[37])
{
	const char *slash = api_version ? strchr(api_version, '/') : NULL;
	int glen = slash ? (int)(slash - api_version) : 0;
	char *key = NULL;
	uuid_t nsu, u;
	int n;

	/* core-group objects ("v1") have no group part */
	n = asprintf(&key, "%.*s/%s/%s/%s", glen,
		     api_version ? api_version : "", kind ? kind : "",
		     ns ? ns : "", name ? name : "");
	if (n < 0 || uuid_parse(CONTRACT_UID_NAMESPACE, nsu)) {
		snprintf(out, 37, "00000000-0000-5000-8000-000000000000");
		free(n < 0 ? NULL : key);
		return;
	}
	/* RFC 4122 section 4.3, SHA-1: libuuid's, not one of our own */
	uuid_generate_sha1(u, nsu, key, (size_t)n);
	free(key);
	uuid_unparse_lower(u, out);
}
