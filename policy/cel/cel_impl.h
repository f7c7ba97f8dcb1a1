/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals shared by the cel_*.c files; nothing here is public API.
 *
 * A program is an AST built once by cel__compile(). Every node that needs
 * storage at run time (list and map literals, a cached regex) gets it at
 * compile time; strings made while evaluating (concatenation, string())
 * come from a bump arena reset at the start of each cel__eval(). Without
 * comprehension macros a node is evaluated at most once per evaluation, so a
 * per-node slot is never live twice.
 */
#ifndef MM_POLICY_CEL_IMPL_H
#define MM_POLICY_CEL_IMPL_H

#include <stdarg.h>

#include "policy/cel/cel.h"
#include "policy/regex/regex.h"

#define CEL_MAX_EXPR_LEN (64 * 1024)
/* Parser recursion: parentheses, brackets, ternaries, call arguments. */
#define CEL_MAX_NEST 64
/* AST height, which also bounds evaluator recursion (a+b+c+... chains). */
#define CEL_MAX_HEIGHT 200
#define CEL_ARENA_MIN  4096
#define CEL_ARENA_MAX  (1 << 20)

/* Static type "unknown until run time" (resource, item, their members). */
#define CEL_DYN 0xff

/* Internal result for "no matching overload"; cel__eval() returns -EINVAL. */
#define CEL_E_OVERLOAD (-ENOEXEC)

enum cel_tok {
	T_EOF,
	T_INT,
	T_UINT,
	T_DOUBLE,
	T_STRING,
	T_BYTES,
	T_IDENT,
	T_TRUE,
	T_FALSE,
	T_NULL,
	T_IN,
	T_LPAREN,
	T_RPAREN,
	T_LBRACKET,
	T_RBRACKET,
	T_LBRACE,
	T_RBRACE,
	T_DOT,
	T_COMMA,
	T_COLON,
	T_QUESTION,
	T_PLUS,
	T_MINUS,
	T_STAR,
	T_SLASH,
	T_PERCENT,
	T_NOT,
	T_EQ,
	T_NE,
	T_LT,
	T_LE,
	T_GT,
	T_GE,
	T_AND,
	T_OR,
};

struct cel_token {
	enum cel_tok kind;
	int col;       /* 1-based, in code points */
	const char *s; /* IDENT: in the source; STRING/BYTES: decoded */
	size_t len;
	uint64_t u; /* INT magnitude (may be 2^63 for "-9223372036854775808"), UINT */
	double d;
};

enum cel_nkind {
	N_LIT,
	N_VAR,
	N_SELECT, /* a.field, field name in lit.str */
	N_INDEX,  /* a[b] */
	N_CALL,
	N_LIST,
	N_MAP,
	N_COND,
	N_AND,
	N_OR,
	N_NOT,
	N_NEG,
	N_BINOP,
	N_HAS, /* has(a.field) */
};

enum cel_op {
	OP_ADD,
	OP_SUB,
	OP_MUL,
	OP_DIV,
	OP_MOD,
	OP_EQ,
	OP_NE,
	OP_LT,
	OP_LE,
	OP_GT,
	OP_GE,
	OP_IN,
};

enum cel_var {
	VAR_VALUE,
	VAR_ATTRIBUTES,
	VAR_RESOURCE,
	VAR_ITEM,
};

struct cel_program;
struct cel_node;

typedef int (*cel_fn)(struct cel_program *p, const struct cel_node *n,
		      const struct cel_value *args, struct cel_value *out);

/* Argument type masks: bit (1 << enum cel_type). */
#define TM(t)  (1u << (t))
#define TM_ANY 0xffffffffu

struct cel_func {
	const char *name;
	bool member;                /* receiver style: x.f(...) */
	bool global;                /* plain style: f(x, ...) */
	uint8_t min_args, max_args; /* including the receiver */
	uint8_t ret;                /* static result type or CEL_DYN */
	uint32_t mask[3];           /* accepted types per argument */
	cel_fn fn;
};

struct cel_list {
	size_t n;
	struct cel_value *v;
};

struct cel_map {
	size_t n;
	struct cel_value *k;
	struct cel_value *v;
};

struct cel_attrs {
	const struct cel_attr *a;
	size_t n;
};

/* A compiled regex for matches(): cached while the pattern stays the same. */
struct cel_regex {
	struct regex *re;
	bool ok;
	char *pat; /* NUL-terminated copy of the pattern compiled into re */
	size_t len;
};

struct cel_node {
	uint8_t kind;  /* enum cel_nkind */
	uint8_t op;    /* enum cel_op for N_BINOP; enum cel_var for N_VAR */
	uint8_t stype; /* static type: enum cel_type or CEL_DYN */
	int col;
	int height;
	struct cel_value lit; /* N_LIT value; N_SELECT/N_HAS field name */
	struct cel_node *a, *b, *c;
	struct cel_node *
		*args; /* N_CALL (receiver first), N_LIST, N_MAP k,v,k,v */
	uint32_t nargs;
	const struct cel_func *fn;
	void *slot; /* N_LIST: cel_list, N_MAP: cel_map, matches: cel_regex */
	struct cel_node *next; /* parser scratch: argument chains */
};

struct cel_program {
	char *src;
	size_t srclen;
	unsigned allowed;
	struct cel_node *root;
	struct cel_node *nodes; /* pool, one per token at most */
	size_t nnodes, cap;
	struct cel_node **argpool;
	size_t nargpool, argcap;
	char *lits; /* decoded string and bytes literals */

	/* evaluation state */
	struct cel_error *err;
	const struct cel_activation *act;
	struct cel_attrs attrs;
	char *arena;
	size_t arena_len, arena_used;
	struct cel_value *vpool; /* list concatenation results */
	size_t vpool_len, vpool_used;
};

/* double -> int64 only inside [-2^63, 2^63) (converting one outside is
 * undefined in C); NaN is out of range too. */
static inline bool cel_impl__double_fits_int(double d)
{
	return d >= -9223372036854775808.0 && d < 9223372036854775808.0;
}

/* cel_lex.c */
int cel_impl__lex(const char *src, size_t len, char *lits,
		  struct cel_token **out, size_t *ntok, struct cel_error *err);

/* cel_parse.c: builds p->root from the tokens. */
int cel_impl__parse(struct cel_program *p, const struct cel_token *toks,
		    size_t ntok, struct cel_error *err);

/* cel_check.c: resolves names and functions, infers static types. */
int cel_impl__check(struct cel_program *p, struct cel_node *n,
		    struct cel_error *err);

/* cel_eval.c */
int cel_impl__fail(struct cel_program *p, int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int cel_impl__no_overload(struct cel_program *p, int col, const char *op,
			  const struct cel_value *a, const struct cel_value *b);
int cel_impl__ev(struct cel_program *p, const struct cel_node *n,
		 struct cel_value *out);
int cel_impl__binop(struct cel_program *p, int op, int col,
		    const struct cel_value *l, const struct cel_value *r,
		    struct cel_value *out);
int cel_impl__neg(struct cel_program *p, int col, const struct cel_value *v,
		  struct cel_value *out);
char *cel_impl__arena_alloc(struct cel_program *p, size_t len);
const char *cel_impl__op_name(int op);

/* cel_value.c */
const char *cel_impl__type_name(int t);
void cel_impl__from_doc(const struct doc_node *d, struct cel_value *v);
size_t cel_impl__agg_size(const struct cel_value *v);
/* i-th element of a list, or i-th key (and value) of a map. */
void cel_impl__agg_at(const struct cel_value *v, size_t i,
		      struct cel_value *key, struct cel_value *val);
/* 1 found, 0 absent. */
int cel_impl__map_find(const struct cel_value *m, const struct cel_value *key,
		       struct cel_value *val);
/* 1 equal, 0 unequal (heterogeneous numeric equality). */
int cel_impl__equal(const struct cel_value *a, const struct cel_value *b);
/* <0, 0, >0, or CEL_E_OVERLOAD when the pair has no ordering. */
int cel_impl__compare(const struct cel_value *a, const struct cel_value *b,
		      int *cmp);
int cel_impl__fmt_double(double d, char *buf, size_t len);
int cel_impl__fmt_value(const struct cel_value *v, char *buf, size_t len);

/* cel_time.c */
int cel_impl__parse_timestamp(const char *s, size_t len, int64_t *ns);
int cel_impl__parse_duration(const char *s, size_t len, int64_t *ns);
int cel_impl__fmt_timestamp(int64_t ns, char *buf, size_t len);
int cel_impl__fmt_duration(int64_t ns, char *buf, size_t len);
/* Broken-down UTC (plus fixed offset) time; tz "UTC", "+hh:mm", "-hh:mm". */
struct cel_tm {
	int64_t year;
	int month, mday, wday, yday, hour, min, sec, ms;
};
int cel_impl__timestamp_split(int64_t ns, const char *tz, size_t tzlen,
			      struct cel_tm *tm);

/* cel_funcs.c */
const struct cel_func *cel_impl__func_lookup(const char *name, size_t len);
void cel_impl__regex_free(struct cel_regex *r);
/* Compiles pat into re unless re already holds it; msg says why not. */
int cel_impl__regex_prepare(struct cel_regex *re, const char *pat, size_t len,
			    char *msg, size_t msglen);

#endif /* MM_POLICY_CEL_IMPL_H */
