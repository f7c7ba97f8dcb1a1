// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/tls/elf_sym.h"

static bool vaddr_to_offset(Elf *e, uint64_t va, uint64_t *off)
{
	size_t n;

	if (elf_getphdrnum(e, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		/* code: in the file part of the segment, not its .bss tail */
		if (va >= ph.p_vaddr && va < ph.p_vaddr + ph.p_filesz) {
			*off = va - ph.p_vaddr + ph.p_offset;
			return true;
		}
	}
	return false;
}

static void scan_symtab(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh,
			const char *const names[], size_t n,
			struct elf_func out[], int dynamic)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t cnt = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; d && i < cnt; i++) {
		GElf_Sym s;
		const char *name;

		if (!gelf_getsym(d, i, &s) || s.st_shndx == SHN_UNDEF ||
		    GELF_ST_TYPE(s.st_info) != STT_FUNC || !s.st_value)
			continue;
		name = elf_strptr(e, sh->sh_link, s.st_name);
		if (!name)
			continue;
		for (size_t k = 0; k < n; k++) {
			if (out[k].offset || strcmp(name, names[k]))
				continue;
			if (!vaddr_to_offset(e, s.st_value, &out[k].offset))
				continue;
			out[k].vaddr = s.st_value;
			out[k].size = s.st_size;
			out[k].dynamic = dynamic;
		}
	}
}

static void read_build_id(Elf *e, char build_id[41])
{
	Elf_Scn *scn = NULL;

	build_id[0] = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		while (d &&
		       (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((char *)d->d_buf + noff, "GNU", 4))
				continue;
			for (size_t i = 0; i < nh.n_descsz && i < 20; i++)
				snprintf(build_id + 2 * i, 3, "%02x",
					 ((unsigned char *)d->d_buf)[doff + i]);
			return;
		}
	}
}

int elf_sym__open(const char *path, int *fd, Elf **e, char *err, size_t errlen)
{
	int ret;

	*e = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	*e = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	return 0;
}

int elf_sym__lookup(const char *path, const char *const names[], size_t n,
		    struct elf_func out[], char build_id[41], char *err,
		    size_t errlen)
{
	Elf *e = NULL;
	Elf_Scn *scn = NULL;
	int fd, ret = 0;

	memset(out, 0, n * sizeof(*out));
	if (build_id)
		build_id[0] = 0;
	ret = elf_sym__open(path, &fd, &e, err, errlen);
	if (ret)
		return ret;
	if (!e || elf_kind(e) != ELF_K_ELF) {
		snprintf(err, errlen, "%s: not an ELF file", path);
		ret = -ENOEXEC;
		goto cleanup;
	}
	/* .dynsym first: what the library exports is what callers reach */
	for (int pass = 0; pass < 2; pass++) {
		scn = NULL;
		while ((scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;

			if (!gelf_getshdr(scn, &sh))
				continue;
			if (sh.sh_type == (pass ? SHT_SYMTAB : SHT_DYNSYM))
				scan_symtab(e, scn, &sh, names, n, out, !pass);
		}
	}
	if (build_id)
		read_build_id(e, build_id);
	for (size_t k = 0; k < n; k++)
		ret += out[k].offset != 0;
cleanup:
	if (e)
		elf_end(e);
	close(fd);
	return ret;
}
