// SPDX-License-Identifier: Apache-2.0
#include <capstone/capstone.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/tls/probe_points.h"

#define PREFIX_MAX 16 /* instructions looked at from the start */
#define SUFFIX_MAX 16 /* instructions looked at back from a RET */

/* The 64-bit register a write to reg changes (0: not one we track). */
static x86_reg full_reg(x86_reg r)
{
	switch (r) {
	case X86_REG_RAX:
	case X86_REG_EAX:
	case X86_REG_AX:
	case X86_REG_AL:
	case X86_REG_AH:
		return X86_REG_RAX;
	case X86_REG_RCX:
	case X86_REG_ECX:
	case X86_REG_CX:
	case X86_REG_CL:
	case X86_REG_CH:
		return X86_REG_RCX;
	case X86_REG_RDX:
	case X86_REG_EDX:
	case X86_REG_DX:
	case X86_REG_DL:
	case X86_REG_DH:
		return X86_REG_RDX;
	case X86_REG_RSI:
	case X86_REG_ESI:
	case X86_REG_SI:
	case X86_REG_SIL:
		return X86_REG_RSI;
	case X86_REG_RDI:
	case X86_REG_EDI:
	case X86_REG_DI:
	case X86_REG_DIL:
		return X86_REG_RDI;
	default:
		return 0;
	}
}

static bool is_flow(csh h, const cs_insn *in)
{
	return cs_insn_group(h, in, CS_GRP_JUMP) ||
	       cs_insn_group(h, in, CS_GRP_CALL) ||
	       cs_insn_group(h, in, CS_GRP_RET) ||
	       cs_insn_group(h, in, CS_GRP_INT) ||
	       cs_insn_group(h, in, CS_GRP_IRET);
}

/* A relative jump, conditional jump or call without prefixes: emulated. */
static bool emulated(csh h, const cs_insn *in, uint64_t *target)
{
	const cs_x86 *x = &in->detail->x86;

	if (!cs_insn_group(h, in, CS_GRP_JUMP) &&
	    !cs_insn_group(h, in, CS_GRP_CALL))
		return false;
	if (x->prefix[0] || x->prefix[1] || x->prefix[2] || x->prefix[3] ||
	    x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
		return false;
	/* loop/jrcxz/jecxz: not among the kernel's emulated branches */
	if (in->id == X86_INS_LOOP || in->id == X86_INS_LOOPE ||
	    in->id == X86_INS_LOOPNE || in->id == X86_INS_JRCXZ ||
	    in->id == X86_INS_JECXZ || in->id == X86_INS_JCXZ)
		return false;
	*target = x->operands[0].imm;
	return true;
}

static bool is_cond_jump(csh h, const cs_insn *in)
{
	uint64_t t;

	return in->id != X86_INS_JMP && cs_insn_group(h, in, CS_GRP_JUMP) &&
	       emulated(h, in, &t);
}

/* Does the instruction (a call clobbers the caller-saved ones) write reg? */
static bool writes(csh h, const cs_insn *in, x86_reg want)
{
	cs_regs rd, wr;
	uint8_t nrd, nwr;

	if (cs_insn_group(h, in, CS_GRP_CALL))
		return true;
	if (cs_regs_access(h, in, rd, &nrd, wr, &nwr))
		return true; /* unknown: assume the worst */
	for (int i = 0; i < nwr; i++)
		if (full_reg(wr[i]) == want)
			return true;
	return false;
}

static bool is_target(const uint64_t *t, size_t n, uint64_t addr)
{
	for (size_t i = 0; i < n; i++)
		if (t[i] == addr)
			return true;
	return false;
}

static int index_of(const cs_insn *in, size_t n, uint64_t addr)
{
	for (size_t i = 0; i < n; i++)
		if (in[i].address == addr)
			return i;
	return -1;
}

/* A call after which the function has only padding: it does not return. */
static bool noreturn_call_at(csh h, const cs_insn *in, size_t n, uint64_t addr)
{
	int i = index_of(in, n, addr);

	if (i < 0 || !cs_insn_group(h, &in[i], CS_GRP_CALL))
		return false;
	for (size_t j = i + 1; j < n; j++)
		if (in[j].id != X86_INS_NOP && in[j].id != X86_INS_INT3 &&
		    !(in[j].id == X86_INS_XCHG && in[j].size == 2 &&
		      in[j].bytes[0] == 0x66 && in[j].bytes[1] == 0x90))
			return false;
	return true;
}

static const x86_reg sysv_args[] = { X86_REG_RDI, X86_REG_RSI, X86_REG_RDX,
				     X86_REG_RCX };
static const x86_reg go_args[] = { X86_REG_RAX, X86_REG_RBX, X86_REG_RCX,
				   X86_REG_RDI };

/* The first emulated branch of the straight-line prefix, args untouched. */
static uint64_t find_entry(csh h, const cs_insn *in, size_t n,
			   const uint64_t *targets, size_t ntargets,
			   const x86_reg *args, unsigned nargs)
{
	uint64_t t;

	for (size_t i = 0; i < n && i < PREFIX_MAX; i++) {
		if (i && is_target(targets, ntargets, in[i].address))
			return 0;
		if (emulated(h, &in[i], &t))
			return in[i].address;
		if (is_flow(h, &in[i]))
			return 0;
		for (unsigned a = 0; a < nargs; a++)
			if (writes(h, &in[i], args[a]))
				return 0;
	}
	return 0;
}

/*
 * Jump targets of the function; false when some are unknown (a jump table).
 * *outside: a jump leaves the function (a tail call, a .cold part that may
 * jump back in where no exit probe would see it).
 */
static bool jump_targets(csh h, const cs_insn *in, size_t n, size_t len,
			 uint64_t *targets, size_t max, size_t *ntargets,
			 bool *outside)
{
	uint64_t t;

	*ntargets = 0;
	*outside = false;
	for (size_t i = 0; i < n; i++) {
		if (!cs_insn_group(h, &in[i], CS_GRP_JUMP))
			continue;
		if (!emulated(h, &in[i], &t) &&
		    !(in[i].detail->x86.op_count == 1 &&
		      in[i].detail->x86.operands[0].type == X86_OP_IMM))
			return false; /* a jump table: targets unknown */
		if (*ntargets == max)
			return false;
		t = in[i].detail->x86.operands[0].imm;
		if (t >= len)
			*outside = true;
		targets[(*ntargets)++] = t;
	}
	return true;
}

uint64_t probe_points__entry(const uint8_t *code, size_t len, unsigned nargs,
			     enum pp_abi abi)
{
	uint64_t targets[256], entry = 0;
	size_t n, ntargets;
	cs_insn *in = NULL;
	bool outside;
	csh h;

	if (nargs > 4)
		nargs = 4;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
		return 0;
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	n = cs_disasm(h, code, len, 0, 0, &in);
	if (n && jump_targets(h, in, n, len, targets, 256, &ntargets, &outside))
		entry = find_entry(h, in, n, targets, ntargets,
				   abi == PP_ABI_GO ? go_args : sysv_args,
				   nargs);
	if (n)
		cs_free(in, n);
	cs_close(&h);
	return entry;
}

int probe_points__find(const uint8_t *code, size_t len, unsigned nargs,
		       struct probe_points *pp)
{
	uint64_t targets[256], t;
	size_t n = 0, ntargets = 0;
	cs_insn *in = NULL;
	bool outside;
	int err = 0;
	csh h;

	memset(pp, 0, sizeof(*pp));
	if (nargs > 4)
		nargs = 4;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
		return -EINVAL;
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	n = cs_disasm(h, code, len, 0, 0, &in);
	if (!n) {
		err = -EINVAL;
		goto cleanup;
	}
	if (!jump_targets(h, in, n, len, targets, 256, &ntargets, &outside) ||
	    outside)
		goto cleanup; /* function start, uretprobe */

	/* exits: one per RET, or none at all */
	for (size_t r = 0; r < n; r++) {
		bool found = false;

		if (!cs_insn_group(h, &in[r], CS_GRP_RET))
			continue;
		if (pp->nexit == PP_MAX_EXITS ||
		    is_target(targets, ntargets, in[r].address))
			goto no_exits;
		for (size_t j = r; j-- > 0 && r - j <= SUFFIX_MAX;) {
			if (is_cond_jump(h, &in[j])) {
				emulated(h, &in[j], &t);
				if (noreturn_call_at(h, in, n, t)) {
					pp->exit[pp->nexit++] = in[j].address;
					found = true;
				}
				break;
			}
			if (is_flow(h, &in[j]) ||
			    writes(h, &in[j], X86_REG_RAX) ||
			    is_target(targets, ntargets, in[j].address))
				break;
		}
		if (!found)
			goto no_exits;
	}
	if (!pp->nexit)
		goto cleanup;
	pp->entry = find_entry(h, in, n, targets, ntargets, sysv_args, nargs);
	goto cleanup;
no_exits:
	pp->nexit = 0;
	pp->entry = 0;
cleanup:
	if (n)
		cs_free(in, n);
	cs_close(&h);
	return err;
}

/*
 * size bytes at off of path, malloc'd; NULL with *err set. The analysis
 * knows x86-64 only: code of another machine (an arm64 node's libssl) is
 * -ENOTSUP, and its callers probe the function's start (and a uretprobe).
 */
static uint8_t *read_code(const char *path, uint64_t off, uint64_t size,
			  int *err)
{
	uint8_t *code = NULL;
	uint8_t ehdr[20];
	int fd;

	*err = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	/* e_machine: offset 18, little-endian on both supported machines */
	if (pread(fd, ehdr, sizeof(ehdr), 0) != (ssize_t)sizeof(ehdr) ||
	    (ehdr[18] | ehdr[19] << 8) != EM_X86_64) {
		close(fd);
		*err = -ENOTSUP;
		return NULL;
	}
	code = malloc(size);
	if (!code)
		*err = -ENOMEM;
	else if (pread(fd, code, size, off) != (ssize_t)size)
		*err = -EIO;
	if (*err) {
		free(code);
		code = NULL;
	}
	close(fd);
	return code;
}

int probe_points__file(const char *path, uint64_t off, uint64_t size,
		       unsigned nargs, struct probe_points *pp)
{
	uint8_t *code;
	int err;

	memset(pp, 0, sizeof(*pp));
	pp->entry = off;
	/* no size (a stripped symbol table): probe the start, uretprobe */
	if (!size || size > 1 << 20)
		return 0;
	code = read_code(path, off, size, &err);
	if (!code)
		return err;
	err = probe_points__find(code, size, nargs, pp);
	pp->entry += off;
	for (uint32_t i = 0; i < pp->nexit; i++)
		pp->exit[i] += off;
	free(code);
	return err;
}

uint64_t probe_points__entry_file(const char *path, uint64_t off, uint64_t size,
				  unsigned nargs, enum pp_abi abi)
{
	uint64_t entry = 0;
	uint8_t *code;
	int err;

	if (!size || size > 1 << 20)
		return off;
	code = read_code(path, off, size, &err);
	if (code)
		entry = probe_points__entry(code, size, nargs, abi);
	free(code);
	return off + entry;
}
