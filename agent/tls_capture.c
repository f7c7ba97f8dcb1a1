// SPDX-License-Identifier: Apache-2.0
/*
 * The TLS object's life: open, share the main object's maps, load, attach
 * the socket-naming and close programs, then uprobes per library file of the
 * proxy processes (pid -1: every process mapping that file, filtered in BPF
 * by the target set, so workers forked later are covered without a new
 * attach). Each process is scanned once; a rescan only looks at new ones.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/loader.h"
#include "agent/tls/discover.h"
#include "agent/tls_capture.h"
#include "bpf/milometer.h"
#include "milometer.skel.h"
#include "tls.skel.h"

#define TLS_PIN_PREFIX "mm_tls_"
#define MAX_TARGETS_PER_PID 8

struct tls_lib_att {
	dev_t dev;
	ino_t ino;
	char path[256];       /* as the process maps it */
	enum tls_lib lib;
	int nlinks;
	struct bpf_link *links[12];
};

struct tls_capture {
	struct tls_bpf *skel;
	struct milometer_bpf *main;
	char pin_dir[256];
	struct tls_lib_att *libs;
	size_t nlibs, cap_libs;
	int *pids;            /* processes scanned (sorted) */
	size_t npids, cap_pids;
	struct tls_capture_stats st;
};

/* Every map the main object has, by name, is the main object's map. */
static int share_maps(struct tls_bpf *skel, struct milometer_bpf *main)
{
	struct bpf_map *map, *m;
	int err;

	bpf_object__for_each_map(map, skel->obj) {
		const char *name = bpf_map__name(map);

		if (strncmp(name, "mm_", 3))
			continue;
		m = bpf_object__find_map_by_name(main->obj, name);
		if (!m)
			continue;
		err = bpf_map__reuse_fd(map, bpf_map__fd(m));
		if (err)
			return err;
	}
	return 0;
}

static int pid_cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static bool pid_seen(struct tls_capture *tc, int pid)
{
	return bsearch(&pid, tc->pids, tc->npids, sizeof(int), pid_cmp);
}

static int pid_add(struct tls_capture *tc, int pid)
{
	if (tc->npids == tc->cap_pids) {
		size_t cap = tc->cap_pids ? tc->cap_pids * 2 : 64;
		int *p = realloc(tc->pids, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		tc->pids = p;
		tc->cap_pids = cap;
	}
	tc->pids[tc->npids++] = pid;
	qsort(tc->pids, tc->npids, sizeof(int), pid_cmp);
	return 0;
}

static struct tls_lib_att *lib_find(struct tls_capture *tc,
				    const struct tls_target *t)
{
	for (size_t i = 0; i < tc->nlibs; i++)
		if (tc->libs[i].dev == t->dev && tc->libs[i].ino == t->ino)
			return &tc->libs[i];
	return NULL;
}

static int attach_one(struct tls_lib_att *a, struct bpf_program *prog,
		      bool ret, const struct tls_target *t, enum tls_func f)
{
	struct bpf_link *l;

	if (!t->f[f].offset || !prog)
		return 0;
	if (a->nlinks >= (int)(sizeof(a->links) / sizeof(a->links[0])))
		return -E2BIG;
	l = bpf_program__attach_uprobe(prog, ret, -1, t->path, t->f[f].offset);
	if (!l)
		return -errno;
	a->links[a->nlinks++] = l;
	return 0;
}

static void lib_detach(struct tls_lib_att *a)
{
	for (int i = 0; i < a->nlinks; i++)
		bpf_link__destroy(a->links[i]);
	a->nlinks = 0;
}

static int lib_attach(struct tls_capture *tc, const struct tls_target *t)
{
	struct tls_bpf *s = tc->skel;
	struct tls_lib_att *a;
	int err = 0;

	if (tc->nlibs == tc->cap_libs) {
		size_t cap = tc->cap_libs ? tc->cap_libs * 2 : 8;
		struct tls_lib_att *p = realloc(tc->libs, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		tc->libs = p;
		tc->cap_libs = cap;
	}
	a = &tc->libs[tc->nlibs];
	memset(a, 0, sizeof(*a));
	a->dev = t->dev;
	a->ino = t->ino;
	a->lib = t->lib;
	snprintf(a->path, sizeof(a->path), "%s", t->mapped);
	if (!t->f[TLS_F_SSL_READ].offset || !t->f[TLS_F_SSL_WRITE].offset) {
		tc->st.refused++;
		tc->nlibs++; /* remembered, not retried */
		return 0;
	}
	err = err ?: attach_one(a, s->progs.mm_ssl_read_enter, false, t, TLS_F_SSL_READ);
	err = err ?: attach_one(a, s->progs.mm_ssl_ret, true, t, TLS_F_SSL_READ);
	err = err ?: attach_one(a, s->progs.mm_ssl_write_enter, false, t, TLS_F_SSL_WRITE);
	err = err ?: attach_one(a, s->progs.mm_ssl_ret, true, t, TLS_F_SSL_WRITE);
	err = err ?: attach_one(a, s->progs.mm_ssl_read_ex_enter, false, t, TLS_F_SSL_READ_EX);
	err = err ?: attach_one(a, s->progs.mm_ssl_ret, true, t, TLS_F_SSL_READ_EX);
	err = err ?: attach_one(a, s->progs.mm_ssl_write_ex_enter, false, t, TLS_F_SSL_WRITE_EX);
	err = err ?: attach_one(a, s->progs.mm_ssl_ret, true, t, TLS_F_SSL_WRITE_EX);
	err = err ?: attach_one(a, s->progs.mm_ssl_handshake_enter, false, t, TLS_F_SSL_DO_HANDSHAKE);
	err = err ?: attach_one(a, s->progs.mm_ssl_ret, true, t, TLS_F_SSL_DO_HANDSHAKE);
	err = err ?: attach_one(a, s->progs.mm_ssl_free_enter, false, t, TLS_F_SSL_FREE);
	if (err) {
		fprintf(stderr, "milometer: TLS capture: uprobes on %s (%s) failed: %s\n",
			t->mapped, t->path, strerror(-err));
		lib_detach(a);
		tc->st.failed++;
		tc->nlibs++;
		return err;
	}
	tc->st.libraries++;
	tc->st.uprobes += a->nlinks;
	tc->nlibs++;
	fprintf(stderr, "milometer: TLS capture: %d uprobes on %s (%s)\n",
		a->nlinks, t->mapped, tls_discover__lib_name(t->lib));
	return 1;
}

int tls_capture__scan(struct tls_capture *tc)
{
	int fd = bpf_map__fd(tc->main->maps.mm_targets);
	struct tls_target *t;
	__u32 key, next, *prev = NULL;
	char err[256];
	int added = 0, n, ret = 0;

	t = calloc(MAX_TARGETS_PER_PID, sizeof(*t));
	if (!t)
		return -ENOMEM;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (pid_seen(tc, key))
			continue;
		n = tls_discover__pid("/proc", key, t, MAX_TARGETS_PER_PID,
				      err, sizeof(err));
		if (n < 0)
			continue; /* gone already: a later scan sees its successor */
		if (pid_add(tc, key)) {
			ret = -ENOMEM;
			break;
		}
		for (int i = 0; i < n; i++) {
			if (lib_find(tc, &t[i]))
				continue;
			if (lib_attach(tc, &t[i]) > 0)
				added++;
		}
	}
	free(t);
	return ret ?: added;
}

struct tls_capture *tls_capture__start(struct milometer_bpf *main,
				       const char *pin_dir,
				       uint32_t max_connections, int *err)
{
	struct tls_capture *tc = calloc(1, sizeof(*tc));
	struct tls_bpf *s;
	int mode = loader__mode();

	*err = 0;
	if (!tc) {
		*err = -ENOMEM;
		return NULL;
	}
	tc->main = main;
	snprintf(tc->pin_dir, sizeof(tc->pin_dir), "%s", pin_dir);
	s = tc->skel = tls_bpf__open();
	if (!s) {
		*err = -errno;
		fprintf(stderr, "milometer: TLS capture: cannot open its BPF object: %s\n",
			strerror(errno));
		goto cleanup;
	}
	*err = share_maps(s, main);
	if (*err) {
		fprintf(stderr, "milometer: TLS capture: cannot share the data path's maps: %s\n",
			strerror(-*err));
		goto cleanup;
	}
	s->rodata->mm_capture_mode = mode;
	s->rodata->mm_wakeup_bytes = main->rodata->mm_wakeup_bytes;
	bpf_map__set_max_entries(s->maps.mm_tls_conns, max_connections);
	if (mode == MM_CAPTURE_SOCK_TP) {
		bpf_program__set_autoload(s->progs.mm_tls_sys_exit, false);
	} else {
		bpf_program__set_autoload(s->progs.mm_tls_sock_recv, false);
		bpf_program__set_autoload(s->progs.mm_tls_sock_send, false);
	}
	*err = tls_bpf__load(s);
	if (*err) {
		fprintf(stderr, "milometer: TLS capture: loading its BPF programs failed: %s (run with -v for the verifier log)\n",
			strerror(-*err));
		goto cleanup;
	}
	/* uprobes have no target in their section: attached per library below */
	*err = tls_bpf__attach(s);
	if (*err) {
		fprintf(stderr, "milometer: TLS capture: attaching failed: %s\n",
			strerror(-*err));
		goto cleanup;
	}
	*err = loader__pin(s->obj, tc->pin_dir, TLS_PIN_PREFIX);
	if (*err) {
		fprintf(stderr, "milometer: TLS capture: pinning under %s failed: %s\n",
			tc->pin_dir, strerror(-*err));
		goto cleanup;
	}
	if (tls_capture__scan(tc) < 0)
		fprintf(stderr, "milometer: TLS capture: scanning the proxy processes failed\n");
	return tc;
cleanup:
	tls_capture__stop(tc);
	return NULL;
}

void tls_capture__stats(const struct tls_capture *tc,
			struct tls_capture_stats *st)
{
	if (tc)
		*st = tc->st;
	else
		memset(st, 0, sizeof(*st));
}

void tls_capture__dump(const struct tls_capture *tc, FILE *out)
{
	if (!tc)
		return;
	for (size_t i = 0; i < tc->nlibs; i++)
		fprintf(out, "%s %s uprobes=%d\n", tc->libs[i].path,
			tls_discover__lib_name(tc->libs[i].lib),
			tc->libs[i].nlinks);
}

void tls_capture__stop(struct tls_capture *tc)
{
	if (!tc)
		return;
	for (size_t i = 0; i < tc->nlibs; i++)
		lib_detach(&tc->libs[i]);
	if (tc->skel) {
		loader__unpin(tc->skel->obj, tc->pin_dir, TLS_PIN_PREFIX);
		tls_bpf__destroy(tc->skel);
	}
	free(tc->libs);
	free(tc->pids);
	free(tc);
}
