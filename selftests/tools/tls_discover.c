// SPDX-License-Identifier: Apache-2.0
/*
 * tls_discover: what TLS capture would hook in a process (agent/tls/), one
 * line per library file: kind, path, build-id and each function's file
 * offset (what a uprobe attaches at), "-" when absent; for a Go executable
 * crypto/tls.(*Conn).Read/Write with the offsets of their RETs. Also
 * whether this kernel can do kTLS.
 *
 *   tls_discover PID...
 */
#include <stdio.h>
#include <stdlib.h>

#include "agent/tls/discover.h"
#include "agent/tls/go_tls.h"
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
			printf("pid=%d lib=%s path=%s mapped=%s build_id=%s",
			       pid, tls_discover__lib_name(t[i].lib), t[i].path,
			       t[i].mapped,
			       t[i].build_id[0] ? t[i].build_id : "-");
			for (int f = 0; f < TLS_F__COUNT; f++) {
				if (t[i].f[f].offset)
					printf(" %s=0x%llx",
					       tls_discover__func_names[f],
					       (unsigned long long)t[i]
						       .f[f]
						       .offset);
				else
					printf(" %s=-",
					       tls_discover__func_names[f]);
			}
			putchar('\n');
		}
		{
			struct go_tls g;
			char exe[64];
			int r;

			snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
			r = go_tls__lookup(exe, &g, err, sizeof(err));
			if (r < 0) {
				printf("pid=%d go=unsupported %s\n", pid, err);
				continue;
			}
			if (r == 0)
				continue;
			printf("pid=%d go=1 magic=0x%x nfunc=%llu text_start=0x%llx\n",
			       pid, g.pclntab_magic,
			       (unsigned long long)g.nfunc,
			       (unsigned long long)g.text_start);
			for (int f = 0; f < GO_TLS__COUNT; f++) {
				printf("pid=%d gofunc=%s vaddr=0x%llx offset=0x%llx size=%llu rets=",
				       pid, go_tls__func_names[f],
				       (unsigned long long)g.f[f].vaddr,
				       (unsigned long long)g.f[f].offset,
				       (unsigned long long)g.f[f].size);
				for (uint32_t k = 0; k < g.f[f].nret; k++)
					printf("%s0x%llx", k ? "," : "",
					       (unsigned long long)g.f[f]
						       .ret_offset[k]);
				putchar('\n');
			}
		}
	}
	return rc;
}
