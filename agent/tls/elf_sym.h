/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Function symbols of an ELF file -> the file offsets uprobes attach at.
 * libbpf 1.1 (Debian 12) attaches a uprobe by (binary path, file offset)
 * only; resolving names itself came with 1.2. A symbol's st_value is a
 * virtual address: the offset is st_value - p_vaddr + p_offset of the
 * PT_LOAD segment that holds it (the kernel maps the file that way).
 */
#ifndef MM_AGENT_TLS_ELF_SYM_H
#define MM_AGENT_TLS_ELF_SYM_H

#include <stddef.h>
#include <stdint.h>

struct elf_func {
	uint64_t vaddr;  /* st_value */
	uint64_t size;   /* st_size */
	uint64_t offset; /* file offset, what uprobes take */
	int dynamic;     /* found in .dynsym (else .symtab) */
};

/*
 * Look up n defined function symbols (.dynsym first, then .symtab).
 * out[i].offset == 0 when names[i] is not defined in the file. Returns how
 * many were found, or a negative errno (not ELF, unreadable) with err set.
 * build_id (41 bytes) gets the GNU build-id in hex when present, else "".
 */
int elf_sym__lookup(const char *path, const char *const names[], size_t n,
		    struct elf_func out[], char build_id[41], char *err,
		    size_t errlen);

struct Elf;
/*
 * path opened for reading as ELF (libelf initialised): *fd, and *e from
 * elf_begin(), NULL when libelf cannot read it (the caller checks its
 * kind, then elf_end()s and closes both). 0, or a negative errno with err
 * set and nothing left open.
 */
int elf_sym__open(const char *path, int *fd, struct Elf **e, char *err,
		  size_t errlen);

#endif /* MM_AGENT_TLS_ELF_SYM_H */
