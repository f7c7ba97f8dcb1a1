// SPDX-License-Identifier: Apache-2.0
#include <capstone/capstone.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/tls/elf_sym.h"
#include "agent/tls/go_tls.h"

const char *const go_tls__func_names[GO_TLS__COUNT] = {
	[GO_TLS_CONN_READ] = "crypto/tls.(*Conn).Read",
	[GO_TLS_CONN_WRITE] = "crypto/tls.(*Conn).Write",
	/* Go 1.17+: what Handshake and HandshakeContext call */
	[GO_TLS_CONN_HANDSHAKE] = "crypto/tls.(*Conn).handshakeContext",
};

/*
 * arm64: fixed 4-byte instructions, so every aligned word is one and no
 * disassembler is needed (capstone would also stop at the first word it
 * cannot decode). RET Xn is 0xd65f0000 | n << 5; Go returns with RET
 * (x30).
 */
static int find_rets_arm64(const uint8_t *code, size_t len, uint64_t *rets,
			   uint32_t max)
{
	int cnt = 0;

	for (size_t i = 0; i + 4 <= len; i += 4) {
		uint32_t w = (uint32_t)code[i] | (uint32_t)code[i + 1] << 8 |
			     (uint32_t)code[i + 2] << 16 |
			     (uint32_t)code[i + 3] << 24;

		if ((w & 0xfffffc1f) != 0xd65f0000)
			continue;
		if ((uint32_t)cnt >= max)
			return -E2BIG;
		rets[cnt++] = i;
	}
	return cnt;
}

int go_tls__find_rets(uint16_t machine, const uint8_t *code, size_t len,
		      uint64_t vaddr, uint64_t *rets, uint32_t max)
{
	csh h;
	cs_insn *insn;
	size_t n;
	int cnt = 0;

	if (machine == EM_AARCH64)
		return find_rets_arm64(code, len, rets, max);
	if (machine != EM_X86_64)
		return -ENOTSUP;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
		return -EINVAL;
	n = cs_disasm(h, code, len, vaddr, 0, &insn);
	for (size_t i = 0; i < n; i++) {
		if (insn[i].id != X86_INS_RET)
			continue;
		if ((uint32_t)cnt >= max) {
			cnt = -E2BIG;
			break;
		}
		rets[cnt++] = insn[i].address - vaddr;
	}
	if (n)
		cs_free(insn, n);
	cs_close(&h);
	return cnt;
}

static bool to_offset(Elf *e, uint64_t va, uint64_t *off)
{
	size_t n;

	if (elf_getphdrnum(e, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_LOAD &&
		    va >= ph.p_vaddr && va < ph.p_vaddr + ph.p_filesz) {
			*off = va - ph.p_vaddr + ph.p_offset;
			return true;
		}
	}
	return false;
}

static uint64_t rd(const uint8_t *p, int size)
{
	uint64_t v = 0;

	for (int i = size - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Fill one function from the pclntab functab entry k (little-endian). */
static int fill(int fd, Elf *e, uint16_t machine, const struct go_tls *g,
		uint32_t entry, uint32_t next, struct go_func *f, char *err,
		size_t errlen)
{
	uint8_t *code;
	int n;

	f->vaddr = g->text_start + entry;
	f->size = next - entry;
	if (!to_offset(e, f->vaddr, &f->offset) || f->size > (1u << 20)) {
		snprintf(err, errlen,
			 "function at 0x%llx is outside the file's segments",
			 (unsigned long long)f->vaddr);
		return -ENOEXEC;
	}
	code = malloc(f->size);
	if (!code)
		return -ENOMEM;
	if (pread(fd, code, f->size, f->offset) != (ssize_t)f->size) {
		free(code);
		return -EIO;
	}
	n = go_tls__find_rets(machine, code, f->size, f->vaddr, f->ret_offset,
			      GO_MAX_RETS);
	free(code);
	if (n < 0) {
		snprintf(err, errlen,
			 "cannot list the RET instructions at 0x%llx",
			 (unsigned long long)f->vaddr);
		return n;
	}
	f->nret = n;
	for (int i = 0; i < n; i++)
		f->ret_offset[i] += f->offset;
	return 0;
}

int go_tls__lookup(const char *path, struct go_tls *g, char *err, size_t errlen)
{
	Elf *e = NULL;
	Elf_Scn *scn = NULL;
	Elf_Data *d = NULL;
	GElf_Ehdr eh = { 0 };
	const uint8_t *t;
	size_t len = 0, shstr;
	uint64_t fnoff, pcln;
	int fd, ps, ret = 0;

	memset(g, 0, sizeof(*g));
	ret = elf_sym__open(path, &fd, &e, err, errlen);
	if (ret)
		return ret;
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getshdrstrndx(e, &shstr))
		goto cleanup; /* not ELF: not Go either */
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstr, sh.sh_name);
		if (name && !strcmp(name, ".gopclntab")) {
			d = elf_rawdata(scn, NULL);
			break;
		}
	}
	if (!d || d->d_size < 64)
		goto cleanup;
	/* a Go binary: the return probes sit on its RETs (go_tls__find_rets) */
	if (!gelf_getehdr(e, &eh) ||
	    (eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64)) {
		snprintf(
			err, errlen,
			"%s: Go crypto/tls capture supports x86-64 and arm64 binaries (ELF machine %u)",
			path, eh.e_machine);
		ret = -ENOTSUP;
		goto cleanup;
	}
	t = d->d_buf;
	len = d->d_size;
	g->pclntab_magic = rd(t, 4);
	ps = t[7];
	/* Go 1.18/1.19: 0xfffffff0, Go 1.20+: 0xfffffff1 (same layout) */
	if ((g->pclntab_magic != 0xfffffff0 &&
	     g->pclntab_magic != 0xfffffff1) ||
	    ps != 8) {
		snprintf(
			err, errlen,
			"%s: Go pclntab magic 0x%x: only Go >= 1.18 on 64-bit is supported (register ABI, pclntab layout)",
			path, g->pclntab_magic);
		ret = -ENOTSUP;
		goto cleanup;
	}
	g->nfunc = rd(t + 8, 8);
	g->text_start = rd(t + 8 + 2 * 8, 8);
	fnoff = rd(t + 8 + 3 * 8, 8);
	pcln = rd(t + 8 + 7 * 8, 8);
	if (pcln + (g->nfunc + 1) * 8 > len || fnoff >= len) {
		snprintf(err, errlen, "%s: truncated .gopclntab", path);
		ret = -ENOEXEC;
		goto cleanup;
	}
	for (uint64_t k = 0; k < g->nfunc; k++) {
		const uint8_t *ft = t + pcln + k * 8;
		uint32_t entry = rd(ft, 4), funcoff = rd(ft + 4, 4);
		uint64_t fo = pcln + funcoff;
		int32_t nameoff;
		const char *name;

		if (fo + 8 > len)
			continue;
		nameoff = (int32_t)rd(t + fo + 4, 4);
		if (nameoff < 0 || fnoff + nameoff >= len)
			continue;
		name = (const char *)t + fnoff + nameoff;
		for (int i = 0; i < GO_TLS__COUNT; i++) {
			if (g->f[i].offset ||
			    strncmp(name, go_tls__func_names[i],
				    len - fnoff - nameoff))
				continue;
			ret = fill(fd, e, eh.e_machine, g, entry, rd(ft + 8, 4),
				   &g->f[i], err, errlen);
			if (ret)
				goto cleanup;
		}
	}
	ret = 1;
cleanup:
	if (e)
		elf_end(e);
	close(fd);
	return ret;
}
