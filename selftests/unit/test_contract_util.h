/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the contract, policy engine and cluster id tests. */
#ifndef MM_TEST_CONTRACT_UTIL_H
#define MM_TEST_CONTRACT_UTIL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/cmd/check.h"
#include "policy/contract/conditions.h"
#include "policy/contract/contract.h"
#include "policy/source/manifest_source.h"

#define SEED_DIR "deploy/examples/contract"
/*
 * The seed's "complete" examples: twins of its scenario examples, which a
 * user never applies together (check shows them as a deliberate conflict).
 */
#define SEED_TWINS_DIR "selftests/unit/testdata/contract/seed-twins"
#define ROUTES         "deploy/examples/contract-httproutes.yaml"
#define TDATA          "selftests/unit/testdata/contract"
/* uuid5 of HTTPRoute demo/catalog, which has no metadata.uid */
#define UID_CATALOG "5a634691-997b-5295-8249-11e8fa194937"

struct tc_ctx {
	struct manifest_source *src;
	struct contract *c;
};

static inline void tc_close(struct tc_ctx *t)
{
	contract__free(t->c);
	manifest_source__free(t->src);
	memset(t, 0, sizeof(*t));
}

/* Load paths into a fresh source and contract. 0 or -errno. */
static inline int tc_open(struct tc_ctx *t, const char *const *paths, size_t n)
{
	char err[512];

	memset(t, 0, sizeof(*t));
	t->src = manifest_source__open_paths(paths, n, err, sizeof(err));
	if (!t->src) {
		fprintf(stderr, "    %s\n", err);
		return -ENOENT;
	}
	t->c = contract__new();
	if (!t->c)
		return -ENOMEM;
	return contract__load(t->c, t->src);
}

static inline int tc_open1(struct tc_ctx *t, const char *path)
{
	return tc_open(t, &path, 1);
}

/* Where one of the seed's examples lives. */
static inline void seed_path(char *buf, size_t len, const char *file)
{
	snprintf(buf, len, "%s/%s",
		 strncmp(file, "seed-complete-", 14) ? SEED_DIR
						     : SEED_TWINS_DIR,
		 file);
}

/* The seed's nine examples: what users apply plus the twins. */
static inline int tc_open_seed(struct tc_ctx *t)
{
	static const char *const paths[] = { SEED_DIR, SEED_TWINS_DIR };

	return tc_open(t, paths, 2);
}

/* Reload after files changed; returns what manifest_source__reload did. */
static inline int tc_reload(struct tc_ctx *t)
{
	int ret = manifest_source__reload(t->src);

	if (ret == 1 && contract__load(t->c, t->src))
		return -ENOMEM;
	return ret;
}

/* The condition of an object, copied into a static; NULL when absent. */
static inline const struct condition *
tc_cond(struct tc_ctx *t, const char *kind, const char *name, const char *type)
{
	static struct cond_set cs;

	if (contract__conditions(t->c, kind, name, &cs))
		return NULL;
	return conditions__get(&cs, type);
}

static inline const char *tc_status(struct tc_ctx *t, const char *kind,
				    const char *name, const char *type)
{
	const struct condition *c = tc_cond(t, kind, name, type);

	return c ? conditions__status_str(c->status) : "(absent)";
}

static inline const char *tc_reason(struct tc_ctx *t, const char *kind,
				    const char *name, const char *type)
{
	const struct condition *c = tc_cond(t, kind, name, type);

	return c ? c->reason : "(absent)";
}

static inline const char *tc_message(struct tc_ctx *t, const char *kind,
				     const char *name, const char *type)
{
	const struct condition *c = tc_cond(t, kind, name, type);

	return c ? c->message : "(absent)";
}

/* Write a file under dir; returns its path (static buffer rotation). */
static inline const char *tc_write(const char *dir, const char *name,
				   const char *content)
{
	static char paths[8][512];
	static int next;
	char *p = paths[next++ % 8];
	FILE *f;

	snprintf(p, 512, "%s/%s", dir, name);
	f = fopen(p, "w");
	if (!f)
		return NULL;
	fputs(content, f);
	fclose(f);
	return p;
}

/* `milometer check ARGS...` with its output in *out and *err (free both). */
static inline int tc_check(const char *const *args, size_t n, char **out,
			   char **err)
{
	char *argv[16] = { "check" };
	size_t olen, elen;
	FILE *o = open_memstream(out, &olen), *e = open_memstream(err, &elen);
	int rc;

	for (size_t i = 0; i < n && i < 15; i++)
		argv[i + 1] = (char *)args[i];
	test_log_to(e);
	rc = check__run((int)n + 1, argv, o, e);
	test_log_to(NULL);
	fclose(o);
	fclose(e);
	return rc;
}

/* Copy a file (the seed examples) into dir under a new name. */
static inline int tc_copy(const char *from, const char *dir, const char *name)
{
	char to[512], buf[4096];
	FILE *in = fopen(from, "r"), *out;
	size_t n;

	if (!in)
		return -errno;
	snprintf(to, sizeof(to), "%s/%s", dir, name);
	out = fopen(to, "w");
	if (!out) {
		fclose(in);
		return -errno;
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	fclose(in);
	fclose(out);
	return 0;
}

#endif /* MM_TEST_CONTRACT_UTIL_H */
