/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The subset of CEL (github.com/google/cel-spec, doc/langdef.md) that metric
 * policies use. Expressions are compiled once when a policy is accepted and
 * evaluated per sample; evaluation allocates nothing: intermediate values live
 * in a scratch area owned by the program, so a program is evaluated by one
 * thread at a time and a result is valid until the next cel__eval() on it.
 *
 * Variables bound by the caller:
 *   value       double     the data-plane sample value
 *   attributes  map(string, string) the sample's attributes
 *   resource    dyn        the subject object (a doc_node tree)
 *   item        dyn        the current element inside seriesFrom
 *
 * Semantics worth knowing when writing policies (cel-spec langdef, as cel-go
 * implements it today; details in policy/cel_*.c):
 *  - no implicit numeric conversion in arithmetic: `value / 1000` is a
 *    compile error (double / int); write `value / 1000.0`. Integer overflow
 *    and integer division or modulus by zero are errors; double division
 *    by zero gives +-Inf.
 *  - == and the orderings compare int, uint and double by numeric value
 *    (1 == 1.0); other mixed types are unequal, and ordering them is
 *    "no matching overload".
 *  - selecting an absent key (a.b, a['b']) is the error "no such key: b";
 *    has(a.b) tests presence. `a.b != null` is false only when b is present
 *    and null, and an error when b is absent.
 *  - int(timestamp) is Unix seconds; there is no double(timestamp): write
 *    double(int(ts)).
 *  - matches() is RE2 (policy/regex/regex.h) with that file's limits on
 *    pattern and compiled size; past them it is an evaluation error.
 *  - timestamps span 1677-09-21..2262-04-11 (int64 nanoseconds).
 *  - the comprehension macros (all, exists, exists_one, map, filter) are not
 *    supported; has() is.
 */
#ifndef MM_POLICY_CEL_H
#define MM_POLICY_CEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct doc_node;

enum cel_type {
	CEL_NULL,
	CEL_BOOL,
	CEL_INT,
	CEL_UINT,
	CEL_DOUBLE,
	CEL_STRING,
	CEL_BYTES,
	CEL_LIST,
	CEL_MAP,
	CEL_TIMESTAMP, /* nanoseconds since the Unix epoch, UTC */
	CEL_DURATION,  /* nanoseconds */
	CEL_TYPE,      /* result of type(x); s holds the type name */
};

/* A string attribute of a data-plane sample. */
struct cel_attr {
	const char *key;
	const char *value;
};

/* Which member of cel_value holds a LIST or MAP (added by the CEL module). */
enum cel_agg {
	CEL_AGG_DOC,   /* node: a DOC_LIST or DOC_MAP of the bound data */
	CEL_AGG_LIST,  /* opaque: a list built by the expression */
	CEL_AGG_MAP,   /* opaque: a map built by the expression */
	CEL_AGG_ATTRS, /* opaque: the activation's attributes */
};

struct cel_value {
	enum cel_type type;
	enum cel_agg agg; /* LIST, MAP only */
	union {
		bool b;
		int64_t i; /* INT, TIMESTAMP, DURATION */
		uint64_t u;
		double d;
		struct {
			const char *s; /* not always NUL-terminated: use len */
			size_t len;
		} str;                       /* STRING, BYTES, TYPE */
		const struct doc_node *node; /* LIST, MAP from the bound data */
		const void *opaque; /* LIST, MAP built by the expression */
	};
};

struct cel_activation {
	double value;
	const struct cel_attr *attrs;
	size_t nattrs;
	const struct doc_node *resource; /* NULL: unbound */
	const struct doc_node *item;     /* NULL: unbound */
};

/* Where and why compilation or evaluation failed. */
struct cel_error {
	int col; /* 1-based column in the expression, 0 if unknown */
	char msg[256];
};

/* Which variables an expression may reference (bit mask). */
#define CEL_VAR_VALUE      (1u << 0)
#define CEL_VAR_ATTRIBUTES (1u << 1)
#define CEL_VAR_RESOURCE   (1u << 2)
#define CEL_VAR_ITEM       (1u << 3)

struct cel_program;

/*
 * Compile expr; variables outside allowed_vars are compile errors. Returns
 * NULL and fills err on a syntax error, unknown function or variable.
 */
struct cel_program *cel__compile(const char *expr, unsigned allowed_vars,
				 struct cel_error *err);
void cel__free(struct cel_program *p);
const char *cel__source(const struct cel_program *p);

/*
 * Evaluate. Returns 0 and sets *out, or -EINVAL when the expression evaluates
 * to a CEL error (no such key, division by zero, no matching overload...) with
 * the reason in err. Never aborts on any input.
 */
int cel__eval(struct cel_program *p, const struct cel_activation *act,
	      struct cel_value *out, struct cel_error *err);

/*
 * If the expression is affine in `value` and uses no other variable
 * (value, value * k, value / k, value + k, k * value - c ...), store a and b
 * such that result == a * value + b and return true. Lets a histogram
 * transform fold into arithmetic with no per-observation evaluation.
 */
bool cel__affine(const struct cel_program *p, double *a, double *b);

/*
 * A field selection from a variable as written: resource.metadata.name,
 * resource.status.conditions[0].type, attributes['k8s.gateway.name'],
 * has(item.reason). A string-literal index is a named segment (indexed
 * set); any other index (a list position, a computed key) is "any".
 */
#define CEL_PATH_MAX 16
struct cel_path_seg {
	const char *s; /* not NUL-terminated: len */
	size_t len;
	bool indexed; /* x['s'] or x[i] rather than x.s */
	bool any;     /* x[i], x[expr]: no name */
	int col;
};
struct cel_path {
	unsigned var;                          /* CEL_VAR_* */
	struct cel_path_seg seg[CEL_PATH_MAX]; /* the first CEL_PATH_MAX */
	size_t n;
	bool has; /* inside has(): the last field may be absent */
	int col;
};
typedef void (*cel_path_fn)(void *ctx, const struct cel_path *p);
/* Calls fn once per longest selection chain in the expression. */
void cel__paths(const struct cel_program *p, cel_path_fn fn, void *ctx);
/* Translators' shape analysis (cel_shape.c). */
/* The CEL_VAR_* bits of the variables the expression reads. */
unsigned cel__vars(const struct cel_program *p);

/* One step of a plain field selection: a field or map key, or a list index. */
struct cel_step {
	const char *s; /* not NUL-terminated; NULL for an index */
	size_t len;    /* length, or the index */
	bool index;
};
/*
 * If the expression is a plain selection from one variable (attributes['k'],
 * resource.metadata.name, item.type, resource.spec.refs[0].name, optionally
 * inside string()), store that variable's CEL_VAR_* bit and the steps and
 * return their count; -1 otherwise. The steps point into the program.
 */
int cel__path(const struct cel_program *p, unsigned *var, struct cel_step *segs,
	      size_t max);
/* Value expressions another system can compute from object fields. */
enum cel_shape {
	CEL_SHAPE_OTHER,
	CEL_SHAPE_ONE,       /* the literal 1 */
	CEL_SHAPE_NUMBER,    /* a field, maybe in int()/double()/timestamp() */
	CEL_SHAPE_TRUE_FLAG, /* field == 'True' ? 1 : 0 */
};
/* The shape, and for fields the path as cel__path() gives it. */
enum cel_shape cel__value_shape(const struct cel_program *p, unsigned *var,
				struct cel_step *segs, size_t max, int *nsegs);
/* If the expression is a single literal, store it and return true. */
bool cel__constant(const struct cel_program *p, struct cel_value *out);

/* Conversions used at the end of a transform. -EINVAL if not convertible. */
int cel__to_double(const struct cel_value *v, double *out);
/* Formats as CEL's string() would; returns length or -ENOSPC. */
int cel__to_string(const struct cel_value *v, char *buf, size_t len);

#endif /* MM_POLICY_CEL_H */
