/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one regular-expression engine of milometer: RE2 syntax, matching in
 * time linear in the subject (no backtracking), behind a C interface.
 *
 * Gateway API leaves RegularExpression syntax to the implementation; Envoy
 * (and so Envoy Gateway) and the CEL spec's matches() both use RE2, so a
 * pattern means here what it means to the proxy and to the API server.
 *
 * Every pattern comes from a tenant's object, so compilation is bounded:
 *   - REGEX_MAX_PATTERN bytes of pattern (the longest RegularExpression
 *     value the Gateway API CRD accepts, header values: 4096);
 *   - REGEX_MAX_MEM bytes for RE2 (its max_mem option: compiled program
 *     plus the lazily built DFA; past the DFA budget RE2 falls back to its
 *     NFA, still linear). Callers also cap how many patterns one object
 *     may hold, so an object's regexes hold at most 64 x 256 KiB;
 *   - REGEX_MAX_PROGRAM instructions (RE2::ProgramSize(), the "program
 *     size" Envoy limits with re2.max_program_size).
 * Past any of them regex__compile() fails with a message saying which.
 */
#ifndef MM_POLICY_REGEX_H
#define MM_POLICY_REGEX_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REGEX_MAX_PATTERN 4096
#define REGEX_MAX_MEM     (256 << 10)
#define REGEX_MAX_PROGRAM 5000

struct regex;

/*
 * Compile pat[0..len) (bytes, NUL allowed only as \x00). 0 on success,
 * -EINVAL with a reason in err (what is wrong, or which limit was
 * passed), -E2BIG past a limit, -ENOMEM.
 */
int regex__compile(const char *pat, size_t len, struct regex **out, char *err,
		   size_t errlen);
/* Does the whole of s[0..len) match (RE2::FullMatch, Envoy's semantics)? */
bool regex__full(const struct regex *re, const char *s, size_t len);
/* Does some substring of s[0..len) match (RE2::PartialMatch, CEL's)? */
bool regex__partial(const struct regex *re, const char *s, size_t len);
/* Instructions of the compiled program (RE2::ProgramSize()). */
int regex__program_size(const struct regex *re);
void regex__free(struct regex *re);

#ifdef __cplusplus
}
#endif

#endif /* MM_POLICY_REGEX_H */
