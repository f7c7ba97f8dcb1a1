/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which TLS libraries a process runs, and where uprobes go in each: the
 * OpenSSL-API functions TLS capture hooks (SSL_read/_ex, SSL_write/_ex, and
 * the bookkeeping ones), as file offsets in the file the process mapped,
 * reached through /proc/PID/map_files (or, checked by inode, under
 * /proc/PID/root) so a container's or a chroot's own libssl is the one
 * found, never the agent's file of the same name. Covers libssl.so.3, libssl.so.1.1, BoringSSL's libssl, and an
 * executable that links one of them statically with its symbols (Envoy
 * builds that keep them). Uprobes attach per file (inode): two processes
 * mapping the same libssl share one target.
 */
#ifndef MM_AGENT_TLS_DISCOVER_H
#define MM_AGENT_TLS_DISCOVER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/tls/elf_sym.h"

enum tls_lib {
	TLS_LIB_OPENSSL3,
	TLS_LIB_OPENSSL11,
	TLS_LIB_BORINGSSL,
	TLS_LIB_STATIC, /* SSL_* defined in the executable itself */
};

enum tls_func {
	TLS_F_SSL_READ,    /* required */
	TLS_F_SSL_WRITE,   /* required */
	TLS_F_SSL_READ_EX, /* OpenSSL >= 1.1.1 */
	TLS_F_SSL_WRITE_EX,
	TLS_F_SSL_DO_HANDSHAKE,
	TLS_F_SSL_SET_FD,
	TLS_F_SSL_SHUTDOWN,
	TLS_F_SSL_FREE, /* forget the SSL* -> fd binding */
	TLS_F__COUNT,
};

extern const char *const tls_discover__func_names[TLS_F__COUNT];

struct tls_target {
	enum tls_lib lib;
	char path[PATH_MAX]; /* open()-able by the agent: /proc/PID/map_files/... */
	char mapped[PATH_MAX]; /* the path as the process sees it */
	dev_t dev;
	ino_t ino;
	char build_id[41];
	struct elf_func f[TLS_F__COUNT]; /* offset 0: not in this file */
};

const char *tls_discover__lib_name(enum tls_lib l);

/*
 * Fill up to max targets for process pid (root_dir: "/proc" normally; tests
 * may pass another procfs root). Returns the number found (0: no TLS
 * library), or a negative errno when /proc/PID cannot be read, with err set.
 */
int tls_discover__pid(const char *proc_root, int pid, struct tls_target *out,
		      size_t max, char *err, size_t errlen);

#endif /* MM_AGENT_TLS_DISCOVER_H */
