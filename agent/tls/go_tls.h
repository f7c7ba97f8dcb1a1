/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Go's crypto/tls in a Go executable (Caddy): the entry and every RET of
 * (*Conn).Read, (*Conn).Write and (*Conn).handshakeContext as file offsets. uretprobes must never be
 * used on Go: they rewrite the return address on a stack Go may move, which
 * crashes the program (golang/go#22008); a uprobe on each RET sees the
 * results in registers instead (Go >= 1.17 register ABI).
 *
 * Names come from .gopclntab, which stripped Go binaries keep (Debian's
 * caddy has no .symtab). Function addresses there are relative to the
 * table's own textStart, not to .text (with cgo they differ by 0x100).
 * RETs are found by disassembling the function with Debian's capstone: a
 * byte scan for 0xc3 would hit immediates and ModRM bytes.
 */
#ifndef MM_AGENT_TLS_GO_TLS_H
#define MM_AGENT_TLS_GO_TLS_H

#include <stddef.h>
#include <stdint.h>

#define GO_MAX_RETS 32

enum go_tls_func {
	GO_TLS_CONN_READ,
	GO_TLS_CONN_WRITE,
	GO_TLS_CONN_HANDSHAKE, /* (*Conn).handshakeContext: binds the socket */
	GO_TLS__COUNT,
};

extern const char *const go_tls__func_names[GO_TLS__COUNT];

struct go_func {
	uint64_t vaddr;
	uint64_t offset; /* entry: file offset */
	uint64_t size;
	uint32_t nret;
	uint64_t ret_offset[GO_MAX_RETS]; /* file offsets of each RET */
};

struct go_tls {
	uint32_t pclntab_magic;
	uint64_t nfunc;
	uint64_t text_start;
	struct go_func f[GO_TLS__COUNT]; /* offset 0: not linked in */
};

/*
 * 1: a Go executable (pclntab found, both functions filled when present);
 * 0: not Go; negative errno with err set: unreadable, or a Go version
 * whose pclntab or ABI we do not support (before Go 1.18).
 */
int go_tls__lookup(const char *path, struct go_tls *out, char *err,
		   size_t errlen);

/*
 * RET instructions of code[0..len) at vaddr, machine code of ELF machine
 * (EM_X86_64, EM_AARCH64): their offsets from code; -E2BIG past max,
 * -ENOTSUP for another machine.
 */
int go_tls__find_rets(uint16_t machine, const uint8_t *code, size_t len,
		      uint64_t vaddr, uint64_t *rets, uint32_t max);

#endif /* MM_AGENT_TLS_GO_TLS_H */
