// SPDX-License-Identifier: Apache-2.0
/*
 * tls_discover: what TLS capture would hook in a process (agent/tls/), one
 * line per library file: kind, path, build-id and each function's file
 * offset (what a uprobe attaches at), "-" when absent. Also whether this
 * kernel can do kTLS.
 *
 *   tls_discover PID...
 */
#include <stdio.h>
#include <stdlib.h>

#include "agent/tls/discover.h"
#include "agent/tls/ktls.h"

int main(int argc, char **argv)
{
	struct tls_target t[8];
	char err[256];
	int rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: tls_discover PID...\n");
		return 2;
	}
	printf("ktls=%d\n", ktls__probe());
	for (int a = 1; a < argc; a++) {
		int pid = atoi(argv[a]);
		int n = tls_discover__pid("/proc", pid, t, 8, err, sizeof(err));

		if (n < 0) {
			fprintf(stderr, "tls_discover: %s\n", err);
			rc = 1;
			continue;
		}
		printf("pid=%d libraries=%d\n", pid, n);
		for (int i = 0; i < n; i++) {
			printf("pid=%d lib=%s path=%s mapped=%s build_id=%s", pid,
			       tls_discover__lib_name(t[i].lib), t[i].path, t[i].mapped,
			       t[i].build_id[0] ? t[i].build_id : "-");
			for (int f = 0; f < TLS_F__COUNT; f++) {
				if (t[i].f[f].offset)
					printf(" %s=0x%llx", tls_discover__func_names[f],
					       (unsigned long long)t[i].f[f].offset);
				else
					printf(" %s=-", tls_discover__func_names[f]);
			}
			putchar('\n');
		}
	}
	return rc;
}
