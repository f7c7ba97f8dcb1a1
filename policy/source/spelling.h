/* SPDX-License-Identifier: Apache-2.0 */
/*
 * "did you mean ...?": the closest known spelling of a name a user wrote
 * (a field, an attribute key, a metric, an enum value), by Levenshtein
 * distance, for the messages of `milometer check` and the CEL checker.
 */
#ifndef MM_POLICY_SPELLING_H
#define MM_POLICY_SPELLING_H

#include <stddef.h>

/* Edits between a[0..la) and b[0..lb); 99 when either is over 128 bytes. */
int spelling__distance(const char *a, size_t la, const char *b, size_t lb);

/*
 * The candidate closest to word, or NULL when none is close enough to be a
 * misspelling of it (more than 2 + strlen(word) / 8 edits away). Ties go
 * to the earlier candidate. cands may hold NULLs, which are skipped.
 */
const char *spelling__closest(const char *word, const char *const *cands,
			      size_t n);

#endif /* MM_POLICY_SPELLING_H */
