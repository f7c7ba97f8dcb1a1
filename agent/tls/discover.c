// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "agent/tls/discover.h"

const char *const tls_discover__func_names[TLS_F__COUNT] = {
	[TLS_F_SSL_READ] = "SSL_read",
	[TLS_F_SSL_WRITE] = "SSL_write",
	[TLS_F_SSL_READ_EX] = "SSL_read_ex",
	[TLS_F_SSL_WRITE_EX] = "SSL_write_ex",
	[TLS_F_SSL_DO_HANDSHAKE] = "SSL_do_handshake",
	[TLS_F_SSL_SET_FD] = "SSL_set_fd",
	[TLS_F_SSL_SHUTDOWN] = "SSL_shutdown",
	[TLS_F_SSL_FREE] = "SSL_free",
};

const char *tls_discover__lib_name(enum tls_lib l)
{
	switch (l) {
	case TLS_LIB_OPENSSL3:
		return "openssl-3";
	case TLS_LIB_OPENSSL11:
		return "openssl-1.1";
	case TLS_LIB_BORINGSSL:
		return "boringssl";
	case TLS_LIB_STATIC:
		return "static";
	}
	return "?";
}

/*
 * By file name first: NSS ships a libssl3.so with other functions, so only
 * OpenSSL's names count, and the symbols must be there (checked by caller).
 */
static int lib_from_name(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!strcmp(base, "libssl.so.3"))
		return TLS_LIB_OPENSSL3;
	if (!strcmp(base, "libssl.so.1.1"))
		return TLS_LIB_OPENSSL11;
	/* BoringSSL builds: unversioned, or Android's/Debian's libssl.so.0 */
	if (!strcmp(base, "libssl.so") || !strncmp(base, "libssl.so.0", 11))
		return TLS_LIB_BORINGSSL;
	return -1;
}

static bool seen(const struct tls_target *t, size_t n, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].dev == dev && t[i].ino == ino)
			return true;
	return false;
}

/*
 * An openable path to the file a mapping maps. /proc/PID/maps names it from
 * the reader's root: for a process under another root (a chroot, or a
 * container seen from another mount namespace) that is neither a path
 * under the process's own root nor, in general, one under ours, and the
 * same path under either may be another file. /proc/PID/map_files/START-END
 * is the mapped file itself, whatever the roots (it needs CAP_SYS_ADMIN);
 * without it, the mapped path and each of its tails under /proc/PID/root,
 * then the mapped path under our own root, and only a file with the mapped
 * inode is taken.
 */
static int mapped_file(const char *proc_root, int pid, unsigned long start,
		       unsigned long end, unsigned long ino, const char *mapped,
		       char *out, size_t outlen, struct stat *st)
{
	const char *tail;

	if (snprintf(out, outlen, "%s/%d/map_files/%lx-%lx", proc_root, pid,
		     start, end) < (int)outlen &&
	    !stat(out, st))
		return 0;
	for (tail = mapped; tail; tail = strchr(tail + 1, '/')) {
		if (snprintf(out, outlen, "%s/%d/root%s", proc_root, pid,
			     tail) >= (int)outlen)
			continue;
		if (!stat(out, st) && st->st_ino == ino)
			return 0;
	}
	if (snprintf(out, outlen, "%s", mapped) < (int)outlen &&
	    !stat(out, st) && st->st_ino == ino)
		return 0;
	return -ENOENT;
}

static int inspect(const char *path, const struct stat *st, const char *mapped,
		   int lib, struct tls_target *t)
{
	char err[256];
	int found;

	memset(t, 0, sizeof(*t));
	snprintf(t->mapped, sizeof(t->mapped), "%s", mapped);
	snprintf(t->path, sizeof(t->path), "%s", path);
	t->dev = st->st_dev;
	t->ino = st->st_ino;
	found = elf_sym__lookup(t->path, tls_discover__func_names, TLS_F__COUNT,
				t->f, t->build_id, err, sizeof(err));
	if (found < 0)
		return found;
	if (!t->f[TLS_F_SSL_READ].offset || !t->f[TLS_F_SSL_WRITE].offset)
		return -ENOENT; /* not an OpenSSL-API library after all */
	t->lib = lib;
	return 0;
}

int tls_discover__pid(const char *proc_root, int pid, struct tls_target *out,
		      size_t max, char *err, size_t errlen)
{
	char path[PATH_MAX], exe[PATH_MAX], *line = NULL;
	size_t cap = 0, n = 0;
	ssize_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d/exe", proc_root, pid);
	len = readlink(path, exe, sizeof(exe) - 1);
	exe[len > 0 ? len : 0] = 0;
	snprintf(path, sizeof(path), "%s/%d/maps", proc_root, pid);
	f = fopen(path, "re");
	if (!f) {
		int ret = -errno;

		snprintf(
			err, errlen,
			"cannot read %s: %s (is process %d running, and are we root?)",
			path, strerror(errno), pid);
		return ret;
	}
	while (getline(&line, &cap, f) > 0 && n < max) {
		unsigned long start, end, off, ino;
		unsigned int maj, min;
		char perms[8], full[PATH_MAX];
		int pos = 0, lib;
		struct stat st;
		char *file;

		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &start, &end,
			   perms, &off, &maj, &min, &ino, &pos) < 7 ||
		    !pos || !ino)
			continue;
		file = line + pos;
		file[strcspn(file, "\n")] = 0;
		if (file[0] != '/' || strstr(file, " (deleted)"))
			continue; /* replaced on disk: the old inode is not at this path */
		/* only the code mapping: one look per file */
		if (perms[2] != 'x')
			continue;
		lib = lib_from_name(file);
		if (lib < 0 && !strcmp(file, exe))
			lib = TLS_LIB_STATIC;
		if (lib < 0)
			continue;
		if (mapped_file(proc_root, pid, start, end, ino, file, full,
				sizeof(full), &st) ||
		    seen(out, n, st.st_dev, st.st_ino))
			continue;
		if (inspect(full, &st, file, lib, &out[n]) == 0)
			n++;
	}
	free(line);
	fclose(f);
	return n;
}
