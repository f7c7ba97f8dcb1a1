// SPDX-License-Identifier: Apache-2.0
/*
 * agent/tls/probe_points.c: where the uprobes of SSL_* go so that the
 * kernel emulates the probed instruction. The first case is the machine
 * code of Debian 12's OpenSSL 3.0 SSL_read byte for byte; the others change
 * it in the ways that must make the analysis fall back (an argument
 * register written early, a branch into the epilogue, a conditional jump
 * that may return, a jump table), where a wrong probe point would read a
 * wrong buffer or a return value that is not the final one.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/tls/discover.h"
#include "agent/tls/probe_points.h"
#include "selftests/unit/test.h"

/* objdump -d libssl.so.3 (3.0.x, Debian 12): SSL_read, 0x90 bytes */
static const uint8_t ssl_read[] = {
	0x48, 0x83, 0xec, 0x18, 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00,
	0x00, 0x48, 0x89, 0x44, 0x24, 0x08, 0x31, 0xc0, 0x85, 0xd2, 0x78, 0x2f,
	0x48, 0x89, 0xe1, 0x48, 0x63, 0xd2, 0xe8, 0x3d, 0xfe, 0xff, 0xff, 0x85,
	0xc0, 0x7e, 0x03, 0x8b, 0x04, 0x24, 0x48, 0x8b, 0x54, 0x24, 0x08, 0x64,
	0x48, 0x2b, 0x14, 0x25, 0x28, 0x00, 0x00, 0x00, 0x75, 0x44, 0x48, 0x83,
	0xc4, 0x18, 0x31, 0xd2, 0x31, 0xc9, 0x31, 0xf6, 0x31, 0xff, 0xc3, 0xe8,
	0x44, 0x9f, 0xfe, 0xff, 0x48, 0x8d, 0x15, 0x05, 0xd5, 0x04, 0x00, 0xbe,
	0x4c, 0x07, 0x00, 0x00, 0x48, 0x8d, 0x3d, 0x62, 0xcc, 0x04, 0x00, 0xe8,
	0x2c, 0xa6, 0xfe, 0xff, 0x31, 0xc0, 0x31, 0xd2, 0xbe, 0x0f, 0x01, 0x00,
	0x00, 0xbf, 0x14, 0x00, 0x00, 0x00, 0xe8, 0x49, 0xa4, 0xfe, 0xff, 0xb8,
	0xff, 0xff, 0xff, 0xff, 0xeb, 0xac, 0xe8, 0x3d, 0xb1, 0xfe, 0xff, 0x66,
	0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, 0x66, 0x90,
};

TEST(tls_probe_points_openssl3_ssl_read)
{
	struct probe_points pp;

	ASSERT_EQ(probe_points__find(ssl_read, sizeof(ssl_read), 3, &pp), 0);
	/* js after "test %edx,%edx": rdi, rsi, rdx untouched */
	ASSERT_EQ(pp.entry, 0x16);
	/* jne __stack_chk_fail: eax is the return value, ret follows */
	ASSERT_EQ(pp.nexit, 1);
	ASSERT_EQ(pp.exit[0], 0x38);
}

TEST(tls_probe_points_arg_written_before_the_first_branch)
{
	uint8_t c[sizeof(ssl_read)];
	struct probe_points pp;

	memcpy(c, ssl_read, sizeof(c));
	/* "xor %eax,%eax" -> "xor %edx,%edx": the third argument is gone */
	c[0x12] = 0x31;
	c[0x13] = 0xd2;
	ASSERT_EQ(probe_points__find(c, sizeof(c), 3, &pp), 0);
	ASSERT_EQ(pp.entry, 0);
	ASSERT_EQ(pp.nexit, 1);
	/* with two arguments read, rdx does not matter */
	ASSERT_EQ(probe_points__find(c, sizeof(c), 2, &pp), 0);
	ASSERT_EQ(pp.entry, 0x16);
}

TEST(tls_probe_points_branch_into_the_epilogue)
{
	uint8_t c[sizeof(ssl_read)];
	struct probe_points pp;

	memcpy(c, ssl_read, sizeof(c));
	/* "jmp 3545a" (0x7c) -> "jmp 0x3e" (add %rsp): skips the jne */
	c[0x7d] = (uint8_t)(0x3e - 0x7e);
	ASSERT_EQ(probe_points__find(c, sizeof(c), 3, &pp), 0);
	ASSERT_EQ(pp.nexit, 0);
	ASSERT_EQ(pp.entry, 0);
}

TEST(tls_probe_points_jcc_that_may_return)
{
	uint8_t c[sizeof(ssl_read)];
	struct probe_points pp;

	memcpy(c, ssl_read, sizeof(c));
	/* jne -> the error path at 0x47, which returns through the ret */
	c[0x39] = 0x47 - 0x3a;
	ASSERT_EQ(probe_points__find(c, sizeof(c), 3, &pp), 0);
	ASSERT_EQ(pp.nexit, 0);
}

TEST(tls_probe_points_rax_written_after_the_jcc)
{
	/* SSL_read_ex of 3.0: sub; call; xor; test; cmovs %edx,%eax; ...; ret */
	static const uint8_t ex[] = {
		0x48, 0x83, 0xec, 0x08, 0xe8, 0xc7, 0xfd, 0xff, 0xff, 0x31,
		0xd2, 0x85, 0xc0, 0x0f, 0x48, 0xc2, 0x48, 0x83, 0xc4, 0x08,
		0x31, 0xd2, 0x31, 0xc9, 0x31, 0xf6, 0x31, 0xff, 0xc3,
	};
	struct probe_points pp;

	ASSERT_EQ(probe_points__find(ex, sizeof(ex), 4, &pp), 0);
	ASSERT_EQ(pp.nexit, 0);
	ASSERT_EQ(pp.entry, 0);
}

TEST(tls_probe_points_jump_table)
{
	/* test %edi,%edi; js +2; jmp *%rax; ret; call x */
	static const uint8_t c[] = {
		0x85, 0xff, 0x78, 0x02, 0xff, 0xe0, 0xc3, 0xe8, 0, 0, 0, 0,
	};
	struct probe_points pp;

	ASSERT_EQ(probe_points__find(c, sizeof(c), 1, &pp), 0);
	ASSERT_EQ(pp.nexit, 0);
	ASSERT_EQ(pp.entry, 0);
}

TEST(tls_probe_points_installed_libssl)
{
	struct probe_points pp;
	struct tls_target t[8];
	char err[256];
	void *h = dlopen("libssl.so.3", RTLD_NOW);
	int n, i;

	ASSERT_TRUE(h, "dlopen libssl.so.3: %s", dlerror());
	n = tls_discover__pid("/proc", getpid(), t, 8, err, sizeof(err));
	for (i = 0; i < n && t[i].lib != TLS_LIB_OPENSSL3; i++)
		;
	ASSERT_TRUE(i < n, "libssl.so.3 not found in this process");
	/* the installed build has the shape above: emulated entry and exit */
	for (int f = TLS_F_SSL_READ; f <= TLS_F_SSL_WRITE; f++) {
		ASSERT_EQ(probe_points__file(t[i].path, t[i].f[f].offset,
					     t[i].f[f].size, 3, &pp),
			  0);
		ASSERT_TRUE(pp.nexit >= 1, "%s: no emulated exit",
			    tls_discover__func_names[f]);
		ASSERT_TRUE(pp.entry > t[i].f[f].offset,
			    "%s: entry at the start",
			    tls_discover__func_names[f]);
	}
	dlclose(h);
}

TEST(tls_probe_points_tail_call_leaves_the_function)
{
	uint8_t c[sizeof(ssl_read) + 5];
	struct probe_points pp;

	memcpy(c, ssl_read, sizeof(ssl_read));
	/* "jmp 3545a" (0x7c) -> "jmp <past the end>": a tail call */
	c[0x7c] = 0xe9;
	c[0x7d] = 0x00;
	c[0x7e] = 0x10;
	c[0x7f] = 0x00;
	c[0x80] = 0x00;
	memset(c + sizeof(ssl_read), 0x90, 5);
	ASSERT_EQ(probe_points__find(c, sizeof(c), 3, &pp), 0);
	ASSERT_EQ(pp.nexit, 0);
	ASSERT_EQ(pp.entry, 0);
	/* the entry alone still is the js */
	ASSERT_EQ(probe_points__entry(c, sizeof(c), 3, PP_ABI_SYSV), 0x16);
}

TEST(tls_probe_points_other_machine_probes_the_start)
{
	/* an arm64 ELF whose code happens to decode as x86-64 */
	char path[] = "/tmp/mm-pp-arm64.XXXXXX";
	uint8_t f[64 + sizeof(ssl_read)] = { 0x7f, 'E', 'L', 'F', 2, 1, 1 };
	struct probe_points pp;
	int fd = mkstemp(path);

	ASSERT_TRUE(fd >= 0, "mkstemp: %s", strerror(errno));
	f[18] = EM_AARCH64;
	memcpy(f + 64, ssl_read, sizeof(ssl_read));
	ASSERT_EQ(write(fd, f, sizeof(f)), (ssize_t)sizeof(f));
	close(fd);
	ASSERT_EQ(probe_points__file(path, 64, sizeof(ssl_read), 3, &pp),
		  -ENOTSUP);
	ASSERT_EQ(pp.entry, 64);
	ASSERT_EQ(pp.nexit, 0);
	ASSERT_EQ(probe_points__entry_file(path, 64, sizeof(ssl_read), 2,
					   PP_ABI_GO),
		  64);
	/* the same bytes as x86-64 are analysed */
	f[18] = EM_X86_64;
	fd = open(path, O_WRONLY);
	ASSERT_EQ(pwrite(fd, f, sizeof(f), 0), (ssize_t)sizeof(f));
	close(fd);
	ASSERT_EQ(probe_points__file(path, 64, sizeof(ssl_read), 3, &pp), 0);
	ASSERT_TRUE(pp.nexit >= 1, "no emulated exit");
	unlink(path);
}
