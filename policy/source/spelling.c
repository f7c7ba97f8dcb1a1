// SPDX-License-Identifier: Apache-2.0
/* Closest spelling: see spelling.h. */
#include <string.h>

#include "policy/source/spelling.h"

#define SPELLING_MAX 128

int spelling__distance(const char *a, size_t la, const char *b, size_t lb)
{
	int row[SPELLING_MAX + 1], prev, tmp;

	if (la > SPELLING_MAX || lb > SPELLING_MAX)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			tmp = row[j];
			row[j] = prev + (a[i - 1] != b[j - 1]);
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			if (tmp + 1 < row[j])
				row[j] = tmp + 1;
			prev = tmp;
		}
	}
	return row[lb];
}

const char *spelling__closest(const char *word, const char *const *cands,
			      size_t n)
{
	size_t len = strlen(word);
	int best_d = 2 + (int)(len / 8) + 1, d;
	const char *best = NULL;

	for (size_t i = 0; i < n; i++) {
		if (!cands[i])
			continue;
		d = spelling__distance(word, len, cands[i], strlen(cands[i]));
		if (d < best_d) {
			best_d = d;
			best = cands[i];
		}
	}
	return best;
}
