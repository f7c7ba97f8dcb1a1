// SPDX-License-Identifier: Apache-2.0
/*
 * agent/tls/: the test process loads Debian's libssl.so.3 itself, and the
 * offsets discovery computes from the ELF file must be where the kernel
 * mapped each function (dlsym address -> /proc/self/maps file offset): the
 * ground truth comes from the loader, not from our ELF reading.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/tls/discover.h"
#include "agent/tls/go_tls.h"
#include "agent/tls/ktls.h"
#include "selftests/unit/test.h"

/* File offset of a loaded address, from the kernel's view of the mapping. */
static long long maps_offset(const void *addr, char *file, size_t flen)
{
	unsigned long a = (unsigned long)addr;
	long long ret = -1;
	char line[1024];
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long s, e, off;
		int pos = 0;

		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &s, &e, &off,
			   &pos) < 3)
			continue;
		if (a >= s && a < e) {
			ret = a - s + off;
			snprintf(file, flen, "%s", line + pos);
			file[strcspn(file, "\n")] = 0;
			break;
		}
	}
	if (f)
		fclose(f);
	return ret;
}

TEST(tls_discover_finds_loaded_libssl_offsets)
{
	void *h = dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL);
	struct tls_target t[8];
	char err[256];
	int n, k = -1;

	ASSERT_TRUE(h, "libssl.so.3 (Debian's libssl3) must be installed: %s",
		    dlerror());
	n = tls_discover__pid("/proc", getpid(), t, 8, err, sizeof(err));
	ASSERT_TRUE(n >= 1, "%d %s", n, err);
	for (int i = 0; i < n; i++)
		if (t[i].lib == TLS_LIB_OPENSSL3)
			k = i;
	ASSERT_TRUE(k >= 0);
	/* map_files as root, else the mapped path under /proc/PID/root */
	ASSERT_TRUE((strstr(t[k].path, "/map_files/") ||
		     strstr(t[k].path, "/root/")) &&
			    strstr(t[k].mapped, "libssl.so.3"),
		    "%s", t[k].path);
	ASSERT_EQ(strlen(t[k].build_id), 40);
	for (int f = 0; f < TLS_F__COUNT; f++) {
		void *sym = dlsym(h, tls_discover__func_names[f]);
		char file[512];
		long long want;

		ASSERT_TRUE(sym, "%s", tls_discover__func_names[f]);
		want = maps_offset(sym, file, sizeof(file));
		ASSERT_STREQ(file, t[k].mapped);
		ASSERT_EQ(t[k].f[f].offset, want);
		ASSERT_TRUE(t[k].f[f].dynamic);
	}
	/* a second look finds the same single file (one target per inode) */
	ASSERT_EQ(tls_discover__pid("/proc", getpid(), t, 8, err, sizeof(err)),
		  n);
	dlclose(h);
}

/* cp SRC DST (a copy: another inode); 0 on success */
static int copy_file(const char *src, const char *dst)
{
	char buf[65536];
	FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
	size_t n;
	int rc = in && out ? 0 : -1;

	while (!rc && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		rc = fwrite(buf, 1, n, out) == n ? 0 : -1;
	if (in)
		fclose(in);
	if (out && fclose(out))
		rc = -1;
	return rc;
}

/*
 * A process under another root, in a procfs tree made here: its maps line
 * names the library from the reader's root (here /elsewhere/jail/...: the
 * jail as seen from a root above it), which is no path under the process's
 * root; the library is a copy of Debian's libssl.so.3 (its own inode) in
 * that root. Found at the right tail of the path, by inode; a file of the
 * same name with another inode (ours, or the jail's at the mapped path) is
 * never taken; map_files, when there, is the file.
 */
TEST(tls_discover_process_under_another_root)
{
	const char *real = "/usr/lib/x86_64-linux-gnu/libssl.so.3";
	char dir[] = "/tmp/mm-unit-tlsroot.XXXXXX", p[PATH_MAX], q[PATH_MAX];
	char err[256], cmd[2 * PATH_MAX + 64];
	struct tls_target t[2];
	struct stat copy, host;
	FILE *f;

	ASSERT_TRUE(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/jail/usr/lib/x86_64-linux-gnu", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s %s/proc/77/map_files", p, dir);
	ASSERT_EQ(system(cmd), 0);
	snprintf(p, sizeof(p), "%s/jail%s", dir, real);
	ASSERT_EQ(copy_file(real, p), 0);
	ASSERT_EQ(stat(p, &copy), 0);
	ASSERT_EQ(stat(real, &host), 0);
	ASSERT_TRUE(copy.st_ino != host.st_ino);
	snprintf(q, sizeof(q), "%s/jail", dir);
	snprintf(p, sizeof(p), "%s/proc/77/root", dir);
	ASSERT_EQ(symlink(q, p), 0);
	snprintf(p, sizeof(p), "%s/proc/77/exe", dir);
	ASSERT_EQ(symlink("/usr/sbin/nginx", p), 0);

#define MAPS(path, ino)                                                           \
	do {                                                                      \
		snprintf(p, sizeof(p), "%s/proc/77/maps", dir);                   \
		f = fopen(p, "w");                                                \
		ASSERT_TRUE(f);                                                   \
		fprintf(f,                                                        \
			"7f0000001000-7f0000002000 r-xp 00001000 fe:00 %lu %s\n", \
			(unsigned long)(ino), path);                              \
		fclose(f);                                                        \
	} while (0)
	snprintf(q, sizeof(q), "%s/proc", dir);
	/* named from above the jail: the tail under its root is the file */
	MAPS("/elsewhere/jail/usr/lib/x86_64-linux-gnu/libssl.so.3",
	     copy.st_ino);
	ASSERT_EQ(tls_discover__pid(q, 77, t, 2, err, sizeof(err)), 1);
	ASSERT_EQ(t[0].ino, copy.st_ino);
	ASSERT_TRUE(strstr(t[0].path, "/77/root/usr/lib/"), "%s", t[0].path);
	ASSERT_TRUE(t[0].f[TLS_F_SSL_READ].offset &&
		    t[0].f[TLS_F_SSL_WRITE].offset);
	/* our own libssl at the mapped path is another file: not taken */
	MAPS(real, host.st_ino + 1 == copy.st_ino ? host.st_ino + 2
						  : host.st_ino + 1);
	ASSERT_EQ(tls_discover__pid(q, 77, t, 2, err, sizeof(err)), 0);
	MAPS("/elsewhere/jail/usr/lib/x86_64-linux-gnu/libssl.so.3",
	     host.st_ino);
	ASSERT_EQ(tls_discover__pid(q, 77, t, 2, err, sizeof(err)), 0);
	/* map_files names the mapped file whatever the paths say */
	snprintf(p, sizeof(p), "%s/proc/77/map_files/7f0000001000-7f0000002000",
		 dir);
	snprintf(q, sizeof(q), "%s/jail%s", dir, real);
	ASSERT_EQ(symlink(q, p), 0);
	snprintf(q, sizeof(q), "%s/proc", dir);
	MAPS("/nowhere/libssl.so.3", copy.st_ino);
	ASSERT_EQ(tls_discover__pid(q, 77, t, 2, err, sizeof(err)), 1);
	ASSERT_EQ(t[0].ino, copy.st_ino);
	ASSERT_TRUE(strstr(t[0].path, "/77/map_files/"), "%s", t[0].path);
	ASSERT_STREQ(t[0].mapped, "/nowhere/libssl.so.3");
#undef MAPS
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ASSERT_EQ(system(cmd), 0);
}

TEST(tls_discover_errors_say_what)
{
	struct tls_target t[1];
	char err[256] = "";

	ASSERT_TRUE(tls_discover__pid("/proc", 0x3ffffffe, t, 1, err,
				      sizeof(err)) < 0);
	ASSERT_TRUE(strstr(err, "cannot read") && strstr(err, "running"), "%s",
		    err);
}

TEST(tls_elf_sym_not_elf)
{
	struct elf_func f[1];
	const char *names[] = { "SSL_read" };
	char err[256], id[41];

	ASSERT_EQ(elf_sym__lookup("/proc/self/status", names, 1, f, id, err,
				  sizeof(err)),
		  -ENOEXEC);
	ASSERT_TRUE(strstr(err, "not an ELF file"), "%s", err);
}

TEST(tls_ktls_probe_matches_registered_ulps)
{
	int k = ktls__probe();
	char ulps[256] = "";
	FILE *f;

	ASSERT_TRUE(k == 0 || k == 1, "probe failed: %d", k);
	f = fopen("/proc/sys/net/ipv4/tcp_available_ulp", "r");
	ASSERT_TRUE(f);
	if (!fgets(ulps, sizeof(ulps), f))
		ulps[0] = 0;
	fclose(f);
	/* after the probe (which may load the module) the list agrees */
	ASSERT_EQ(k, strstr(ulps, "tls") != NULL);
	test_log("kTLS %s on this kernel (tcp_available_ulp: %s)\n",
		 k ? "available" : "NOT available", ulps);
}

TEST(tls_go_ret_finder_decodes_instructions)
{
	/* 0xc3 inside an immediate and a displacement must not count */
	static const uint8_t code[] = {
		0xb8, 0xc3, 0x00, 0x00, 0x00,       /* mov $0xc3,%eax */
		0x48, 0x8b, 0x8b, 0xc3, 0,    0, 0, /* mov 0xc3(%rbx),%rcx */
		0xc3,                               /* ret */
		0x90,                               /* nop */
		0xc3,                               /* ret */
	};
	uint64_t rets[4];

	ASSERT_EQ(go_tls__find_rets(EM_X86_64, code, sizeof(code), 0x1000, rets,
				    4),
		  2);
	ASSERT_EQ(rets[0], 12);
	ASSERT_EQ(rets[1], 14);
	ASSERT_EQ(go_tls__find_rets(EM_X86_64, code, sizeof(code), 0x1000, rets,
				    1),
		  -E2BIG);
}

TEST(tls_go_ret_finder_arm64)
{
	/* a Go arm64 function's shape: stack check on g (x28), body, RETs */
	static const uint8_t code[] = {
		0x90, 0x0b, 0x40,
		0xf9, /* ldr x16, [x28, #16] */
		0xff, 0x63, 0x30,
		0xeb, /* cmp sp, x16 */
		0xc0, 0x03, 0x5f,
		0xd6, /* ret */
		0x00, 0x00, 0x80,
		0xd2, /* mov x0, #0 */
		0xc0, 0x03, 0x5f,
		0x36, /* RET's operand bits, a tbz: not a RET */
		0x20, 0x00, 0x5f,
		0xd6,             /* ret x1 */
		0xc0, 0x03, 0x5f, /* a truncated word */
	};
	uint64_t rets[4];

	ASSERT_EQ(go_tls__find_rets(EM_AARCH64, code, sizeof(code), 0x1000,
				    rets, 4),
		  2);
	ASSERT_EQ(rets[0], 8);
	ASSERT_EQ(rets[1], 20);
	ASSERT_EQ(go_tls__find_rets(EM_AARCH64, code, sizeof(code), 0x1000,
				    rets, 1),
		  -E2BIG);
	ASSERT_EQ(go_tls__find_rets(EM_RISCV, code, sizeof(code), 0x1000, rets,
				    4),
		  -ENOTSUP);
}

TEST(tls_go_lookup_not_go)
{
	struct go_tls g;
	char err[256];

	/* a C library is not Go: 0, no error */
	ASSERT_EQ(go_tls__lookup("/usr/lib/x86_64-linux-gnu/libssl.so.3", &g,
				 err, sizeof(err)),
		  0);
}

/* Debian's android-libboringssl: BoringSSL as a shared library. */
TEST(tls_discover_finds_boringssl)
{
	const char *lib = "/usr/lib/x86_64-linux-gnu/android/libssl.so.0";
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	struct tls_target t[8];
	char err[256];
	int n, k = -1;

	ASSERT_TRUE(h, "apt-get install android-libboringssl: %s", dlerror());
	n = tls_discover__pid("/proc", getpid(), t, 8, err, sizeof(err));
	ASSERT_TRUE(n >= 1, "%d %s", n, err);
	for (int i = 0; i < n; i++)
		if (t[i].lib == TLS_LIB_BORINGSSL)
			k = i;
	ASSERT_TRUE(k >= 0);
	ASSERT_STREQ(t[k].mapped, lib);
	for (int f = 0; f < TLS_F__COUNT; f++) {
		void *sym = dlsym(h, tls_discover__func_names[f]);
		char file[512];

		if (!sym) { /* BoringSSL lacks some OpenSSL 1.1.1 functions */
			ASSERT_EQ(t[k].f[f].offset, 0);
			continue;
		}
		ASSERT_EQ(t[k].f[f].offset,
			  maps_offset(sym, file, sizeof(file)));
		ASSERT_STREQ(file, lib);
	}
	dlclose(h);
}
