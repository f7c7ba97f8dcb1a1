// SPDX-License-Identifier: Apache-2.0
/*
 * CEL hot-path transforms, ns per cel__eval() (moved out of the unit suite:
 * timing is a figure, not a test). Prints one line per expression.
 */
#include <stdio.h>
#include <time.h>

#include "selftests/unit/test_cel_hot.h"

static double bench_one(struct cel_program *p, const struct cel_activation *a,
			int iters)
{
	struct timespec t0, t1;
	struct cel_value v;
	volatile double sink = 0;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < iters; i++) {
		cel__eval(p, a, &v, NULL);
		sink += v.type;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	(void)sink;
	return ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) /
	       iters;
}

int main(void)
{
	struct bench_env e;
	size_t i;

	if (bench_env(&e)) {
		fprintf(stderr,
			"bench_cel: the activation document does not parse\n");
		return 1;
	}
	for (i = 0; i < sizeof(hot) / sizeof(hot[0]); i++) {
		struct cel_program *p =
			cel__compile(hot[i].expr, CEL_ALL_VARS, NULL);

		if (!p) {
			fprintf(stderr, "bench_cel: %s does not compile\n",
				hot[i].expr);
			return 1;
		}
		bench_one(p, &e.act, 10000);
		printf("%7.1f ns/eval  %s\n", bench_one(p, &e.act, 1000000),
		       hot[i].expr);
		cel__free(p);
	}
	doc__free_file(e.f);
	return 0;
}
