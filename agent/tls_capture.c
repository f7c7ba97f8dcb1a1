// SPDX-License-Identifier: Apache-2.0
/*
 * The TLS object's life: open, share the main object's maps, load, attach
 * the socket-naming and close programs, then uprobes per proxy process on
 * the TLS libraries it maps. Each process is scanned once; a rescan only
 * looks at new ones and drops the uprobes of those that left.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/loader.h"
#include "agent/tls/discover.h"
#include "agent/tls/go_tls.h"
#include "agent/tls/probe_points.h"
#include "agent/tls_capture.h"
#include "bpf/milometer.h"
#include "policy/util/json_out.h"
#include "milometer.skel.h"
#include "tls.skel.h"
#include "tls_bl.skel.h"
#define LOG_MODULE "TLS capture"
#include "policy/util/log.h"

#define TLS_PIN_PREFIX      "mm_tls_"
#define MAX_TARGETS_PER_PID 8

/* One proxy process: its uprobes (task-bound: no other process traps). */
struct tls_proc {
	int pid;
	bool seen;     /* in the target set at the last scan */
	dev_t exe_dev; /* its executable when attached */
	ino_t exe_ino;
	unsigned zero_scans; /* looked at again with nothing to hook */
	int nlinks, cap_links;
	struct bpf_link **links;
};

/* A library file attached in some process, for the dump and the stats. */
struct tls_lib_seen {
	dev_t dev;
	ino_t ino;
	enum tls_lib lib;
	bool usable;    /* has SSL_read and SSL_write */
	bool announced; /* logged once, at its first attach */
	char path[256]; /* as the process maps it */
};

struct tls_capture {
	struct tls_bpf *skel;
	struct milometer_bpf *main;
	char pin_dir[256];
	struct tls_proc *procs;
	size_t nprocs, cap_procs;
	struct tls_lib_seen *libs;
	size_t nlibs, cap_libs;
	struct tls_capture_stats st;
	bool go_announced;
	uint64_t scans, fork_scans; /* all, and those a fork event asked for */
	uint64_t recheck_ns;        /* CLOCK_MONOTONIC of the last recheck */
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

/* tls.bpf.o, or its bounded-loop build beside the main object's (loader.c) */
static struct tls_bpf *open_object(void)
{
	struct tls_bpf *obj = calloc(1, sizeof(*obj));
	int err;

	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	err = tls_bpf__create_skeleton(obj);
	if (!err && !strcmp(loader__loops(), "bounded"))
		obj->skeleton->data =
			(void *)tls_bl_bpf__elf_bytes(&obj->skeleton->data_sz);
	if (!err)
		err = bpf_object__open_skeleton(obj->skeleton, NULL);
	if (err) {
		tls_bpf__destroy(obj);
		errno = -err;
		return NULL;
	}
	return obj;
}

static struct tls_proc *proc_find(struct tls_capture *tc, int pid)
{
	for (size_t i = 0; i < tc->nprocs; i++)
		if (tc->procs[i].pid == pid)
			return &tc->procs[i];
	return NULL;
}

static void proc_detach(struct tls_proc *p)
{
	for (int i = 0; i < p->nlinks; i++)
		bpf_link__destroy(p->links[i]);
	free(p->links);
	p->links = NULL;
	p->nlinks = p->cap_links = 0;
}

/* Links from index `from` on go: a half-attached library is none. */
static void links_drop(struct tls_proc *p, int from)
{
	while (p->nlinks > from)
		bpf_link__destroy(p->links[--p->nlinks]);
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t c;
	void *p;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 16;
	p = realloc(*arr, c * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = c;
	return 0;
}

static int attach_at(struct tls_proc *p, struct bpf_program *prog, bool ret,
		     const char *path, uint64_t off)
{
	size_t cap = p->cap_links;
	struct bpf_link *l;

	if (grow((void **)&p->links, &cap, p->nlinks, sizeof(*p->links)))
		return -ENOMEM;
	p->cap_links = cap;
	l = bpf_program__attach_uprobe(prog, ret, p->pid, path, off);
	if (!l)
		return -errno;
	p->links[p->nlinks++] = l;
	return 0;
}

/*
 * Entry and return of function f (reading nargs arguments at entry): at
 * the instructions the kernel emulates when the code allows it (one trap
 * each instead of a trap and a single-step, see probe_points.h), else at
 * the function's start with a uretprobe.
 */
static int attach_call(struct tls_capture *tc, struct tls_proc *p,
		       struct bpf_program *enter, const struct tls_target *t,
		       enum tls_func f, unsigned nargs)
{
	const struct elf_func *fn = &t->f[f];
	struct probe_points pp;
	int err;

	if (!fn->offset)
		return 0;
	if (probe_points__file(t->path, fn->offset, fn->size, nargs, &pp))
		pp = (struct probe_points){ .entry = fn->offset };
	err = attach_at(p, enter, false, t->path, pp.entry);
	if (err || f == TLS_F_SSL_FREE)
		return err;
	if (!pp.nexit)
		return attach_at(p, tc->skel->progs.mm_ssl_ret, true, t->path,
				 fn->offset);
	tc->st.emulated++;
	for (uint32_t i = 0; i < pp.nexit && !err; i++)
		err = attach_at(p, tc->skel->progs.mm_ssl_ret, false, t->path,
				pp.exit[i]);
	return err;
}

static struct tls_lib_seen *lib_note(struct tls_capture *tc,
				     const struct tls_target *t)
{
	struct tls_lib_seen *l;

	for (size_t i = 0; i < tc->nlibs; i++)
		if (tc->libs[i].dev == t->dev && tc->libs[i].ino == t->ino)
			return &tc->libs[i];
	if (grow((void **)&tc->libs, &tc->cap_libs, tc->nlibs, sizeof(*l)))
		return NULL;
	l = &tc->libs[tc->nlibs++];
	memset(l, 0, sizeof(*l));
	l->dev = t->dev;
	l->ino = t->ino;
	l->lib = t->lib;
	l->usable = t->f[TLS_F_SSL_READ].offset && t->f[TLS_F_SSL_WRITE].offset;
	snprintf(l->path, sizeof(l->path), "%s", t->mapped);
	if (l->usable) {
		tc->st.libraries++;
	} else {
		tc->st.refused++;
	}
	return l;
}

/* Uprobes for one library of process p: entry and return of each call. */
static int lib_attach(struct tls_capture *tc, struct tls_proc *p,
		      const struct tls_target *t)
{
	struct tls_bpf *s = tc->skel;
	struct tls_lib_seen *l = lib_note(tc, t);
	int before = p->nlinks, emulated = tc->st.emulated, err = 0;

	if (!l)
		return -ENOMEM;
	if (!l->usable)
		return 0;
	err = err
		      ?: attach_call(tc, p, s->progs.mm_ssl_read_enter, t,
				     TLS_F_SSL_READ, 3);
	err = err
		      ?: attach_call(tc, p, s->progs.mm_ssl_write_enter, t,
				     TLS_F_SSL_WRITE, 3);
	err = err
		      ?: attach_call(tc, p, s->progs.mm_ssl_read_ex_enter, t,
				     TLS_F_SSL_READ_EX, 4);
	err = err
		      ?: attach_call(tc, p, s->progs.mm_ssl_write_ex_enter, t,
				     TLS_F_SSL_WRITE_EX, 4);
	err = err
		      ?: attach_call(tc, p, s->progs.mm_ssl_handshake_enter, t,
				     TLS_F_SSL_DO_HANDSHAKE, 1);
	err = err
		      ?: attach_call(tc, p, s->progs.mm_ssl_free_enter, t,
				     TLS_F_SSL_FREE, 1);
	if (err) {
		/* the process may have exited meanwhile: not worth a line */
		if (err != -ESRCH && err != -ENOENT)
			pr_err("uprobes on %s in process %d failed: %s\n",
			       t->mapped, p->pid, strerror(-err));
		tc->st.failed++;
		links_drop(p, before);
		return err;
	}
	tc->st.uprobes += p->nlinks - before;
	if (!l->announced) {
		l->announced = true;
		pr_info("uprobes on %s (%s), %d calls returning at emulated instructions (no uretprobe)\n",
			t->mapped, tls_discover__lib_name(t->lib),
			tc->st.emulated - emulated);
	}
	return 0;
}

/*
 * Go's crypto/tls in the executable itself (Caddy): entry on the first jump
 * (after the stack-growth check), a uprobe on every RET for the return.
 */
static int go_attach(struct tls_capture *tc, struct tls_proc *p)
{
	static const enum go_tls_func fns[] = { GO_TLS_CONN_READ,
						GO_TLS_CONN_WRITE,
						GO_TLS_CONN_HANDSHAKE };
	struct tls_bpf *s = tc->skel;
	char path[64], err[256];
	struct go_tls g;
	int ret, before = p->nlinks;

	snprintf(path, sizeof(path), "/proc/%d/exe", p->pid);
	ret = go_tls__lookup(path, &g, err, sizeof(err));
	if (ret <= 0)
		return ret; /* not Go, or a Go we do not read: nothing */
	for (size_t i = 0; i < 3; i++) {
		const struct go_func *f = &g.f[fns[i]];
		struct bpf_program *enter =
			fns[i] == GO_TLS_CONN_READ ? s->progs.mm_go_read_enter
			: fns[i] == GO_TLS_CONN_WRITE
				? s->progs.mm_go_write_enter
				: s->progs.mm_go_handshake_enter;
		struct bpf_program *exit =
			fns[i] == GO_TLS_CONN_READ ? s->progs.mm_go_read_ret
			: fns[i] == GO_TLS_CONN_WRITE
				? s->progs.mm_go_write_ret
				: s->progs.mm_go_handshake_ret;
		uint64_t entry;

		if (!f->offset || !f->nret)
			continue;
		entry = probe_points__entry_file(path, f->offset, f->size, 2,
						 PP_ABI_GO);
		ret = attach_at(p, enter, false, path, entry);
		for (uint32_t r = 0; r < f->nret && !ret; r++)
			ret = attach_at(p, exit, false, path, f->ret_offset[r]);
		if (ret) {
			if (ret != -ESRCH && ret != -ENOENT)
				pr_err("uprobes on Go crypto/tls in process %d failed: %s\n",
				       p->pid, strerror(-ret));
			tc->st.failed++;
			links_drop(p, before);
			return ret;
		}
	}
	if (p->nlinks == before)
		return 0;
	tc->st.uprobes += p->nlinks - before;
	s->bss->mm_go_targets = 1;
	if (!tc->go_announced) {
		tc->go_announced = true;
		tc->st.libraries++;
		pr_info("uprobes on Go crypto/tls in process %d (%d: entries at their first jump, every RET)\n",
			p->pid, p->nlinks - before);
	}
	return 1;
}

/*
 * Uprobes are bound to each proxy process, not to the library file: a
 * process that is not the proxy (a client on the node, another pod from the
 * same image) never traps. The agent scans when a target forks (its fork
 * event) and every 100 ms: a new worker is attached then (a connection it
 * served before is picked up at its next exchange).
 */
/* The executable's identity: an exec in place (same pid) changes it. */
static void exe_id(int pid, dev_t *dev, ino_t *ino)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	if (stat(path, &st)) {
		*dev = 0;
		*ino = 0;
		return;
	}
	*dev = st.st_dev;
	*ino = st.st_ino;
}

/* Discover process p's TLS code and attach to it; the links it had go. */
static int proc_attach(struct tls_capture *tc, struct tls_proc *p,
		       struct tls_target *t)
{
	char err[256];
	int n, added = 0;

	tc->st.uprobes -= p->nlinks;
	proc_detach(p);
	exe_id(p->pid, &p->exe_dev, &p->exe_ino);
	n = tls_discover__pid("/proc", p->pid, t, MAX_TARGETS_PER_PID, err,
			      sizeof(err));
	if (n < 0)
		return n; /* gone already */
	for (int i = 0; i < n; i++)
		if (!lib_attach(tc, p, &t[i]) && p->nlinks)
			added = 1;
	if (!n && go_attach(tc, p) > 0)
		added = 1;
	return added;
}

/*
 * Every 5 s, processes are looked at again: one that exec'd in place (a
 * container's entrypoint script exec'ing the proxy) has another executable;
 * one with nothing hooked may have loaded its TLS library since (dlopen),
 * tried up to 12 times (a minute). By time, not by scans: forks add scans.
 */
#define RECHECK_NS   (5 * 1000000000ULL)
#define ZERO_RETRIES 12

int tls_capture__scan(struct tls_capture *tc, uint64_t now, bool on_fork)
{
	int fd = bpf_map__fd(tc->main->maps.mm_targets);
	bool recheck = now - tc->recheck_ns >= RECHECK_NS;
	struct tls_target *t;
	struct tls_proc *p;
	__u32 key, next, *prev = NULL;
	int added = 0, ret = 0;

	t = calloc(MAX_TARGETS_PER_PID, sizeof(*t));
	if (!t)
		return -ENOMEM;
	tc->scans++;
	tc->fork_scans += on_fork;
	if (recheck)
		tc->recheck_ns = now;
	for (size_t i = 0; i < tc->nprocs; i++)
		tc->procs[i].seen = false;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		p = proc_find(tc, key);
		if (p) {
			dev_t dev;
			ino_t ino;

			p->seen = true;
			if (!recheck)
				continue;
			exe_id(p->pid, &dev, &ino);
			if (dev != p->exe_dev || ino != p->exe_ino ||
			    (!p->nlinks && p->zero_scans++ < ZERO_RETRIES))
				added += proc_attach(tc, p, t) > 0;
			continue;
		}
		if (grow((void **)&tc->procs, &tc->cap_procs, tc->nprocs,
			 sizeof(*p))) {
			ret = -ENOMEM;
			break;
		}
		p = &tc->procs[tc->nprocs];
		memset(p, 0, sizeof(*p));
		p->pid = key;
		p->seen = true;
		if (proc_attach(tc, p, t) < 0)
			continue; /* gone already: not kept */
		tc->nprocs++;
		added += p->nlinks > 0;
	}
	/* processes that left the target set (exited, exec'd another program) */
	for (size_t i = 0; i < tc->nprocs;) {
		if (tc->procs[i].seen) {
			i++;
			continue;
		}
		tc->st.uprobes -= tc->procs[i].nlinks;
		proc_detach(&tc->procs[i]);
		tc->procs[i] = tc->procs[--tc->nprocs];
	}
	tc->st.processes = 0;
	for (size_t i = 0; i < tc->nprocs; i++)
		tc->st.processes += tc->procs[i].nlinks > 0;
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
	s = tc->skel = open_object();
	if (!s) {
		*err = -errno;
		pr_err("cannot open its BPF object: %s\n", strerror(errno));
		goto cleanup;
	}
	*err = share_maps(s, main);
	if (*err) {
		pr_err("cannot share the data path's maps: %s\n",
		       strerror(-*err));
		goto cleanup;
	}
	s->rodata->mm_capture_mode = mode;
	s->rodata->mm_wakeup_bytes = main->rodata->mm_wakeup_bytes;
	bpf_map__set_max_entries(s->maps.mm_tls_conns, max_connections);
	/* tests make Go calls outnumber the map's entries */
	if (getenv("MILOMETER_TEST_MAX_GO_CALLS"))
		bpf_map__set_max_entries(
			s->maps.mm_tls_gocalls,
			strtoul(getenv("MILOMETER_TEST_MAX_GO_CALLS"), NULL,
				10));
	if (mode == MM_CAPTURE_SOCK_TP) {
		bpf_program__set_autoload(s->progs.mm_tls_sys_exit, false);
	} else {
		bpf_program__set_autoload(s->progs.mm_tls_sock_recv, false);
		bpf_program__set_autoload(s->progs.mm_tls_sock_send, false);
	}
	loader__log_level(s->obj);
	*err = tls_bpf__load(s);
	if (*err) {
		pr_err("loading its BPF programs failed: %s (run with -v for the verifier log)\n",
		       strerror(-*err));
		goto cleanup;
	}
	/* uprobes have no target in their section: attached per library below */
	*err = tls_bpf__attach(s);
	if (*err) {
		pr_err("attaching failed: %s\n", strerror(-*err));
		goto cleanup;
	}
	*err = loader__pin(s->obj, tc->pin_dir, TLS_PIN_PREFIX);
	if (*err) {
		pr_err("pinning under %s failed: %s\n", tc->pin_dir,
		       strerror(-*err));
		goto cleanup;
	}
	/* every process is new: no recheck (now 0) */
	if (tls_capture__scan(tc, 0, false) < 0)
		pr_err("scanning the proxy processes failed\n");
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

void tls_capture__dump(const struct tls_capture *tc, FILE *out, int json)
{
	if (!tc) {
		fputs(json ? "{\"enabled\":false}\n"
			   : "TLS capture is off (feature gate TLSCapture)\n",
		      out);
		return;
	}
	if (!json) {
		for (size_t i = 0; i < tc->nlibs; i++)
			fprintf(out, "library %s %s%s\n", tc->libs[i].path,
				tls_discover__lib_name(tc->libs[i].lib),
				tc->libs[i].usable
					? ""
					: " (no SSL_read/SSL_write)");
		for (size_t i = 0; i < tc->nprocs; i++)
			fprintf(out, "pid %d uprobes=%d\n", tc->procs[i].pid,
				tc->procs[i].nlinks);
		fprintf(out, "scans %llu, on a fork event %llu\n",
			(unsigned long long)tc->scans,
			(unsigned long long)tc->fork_scans);
		return;
	}
	fprintf(out,
		"{\"enabled\":true,\"scans\":%llu,\"fork_scans\":%llu,\"libraries\":[",
		(unsigned long long)tc->scans,
		(unsigned long long)tc->fork_scans);
	for (size_t i = 0; i < tc->nlibs; i++) {
		fputs(i ? ",{\"path\":" : "{\"path\":", out);
		json_out__str(out, tc->libs[i].path);
		fprintf(out, ",\"library\":\"%s\",\"usable\":%s}",
			tls_discover__lib_name(tc->libs[i].lib),
			tc->libs[i].usable ? "true" : "false");
	}
	fputs("],\"processes\":[", out);
	for (size_t i = 0; i < tc->nprocs; i++)
		fprintf(out, "%s{\"pid\":%d,\"uprobes\":%d}", i ? "," : "",
			tc->procs[i].pid, tc->procs[i].nlinks);
	fputs("]}\n", out);
}

void tls_capture__stop(struct tls_capture *tc)
{
	if (!tc)
		return;
	for (size_t i = 0; i < tc->nprocs; i++)
		proc_detach(&tc->procs[i]);
	if (tc->skel) {
		loader__unpin(tc->skel->obj, tc->pin_dir, TLS_PIN_PREFIX);
		tls_bpf__destroy(tc->skel);
	}
	free(tc->procs);
	free(tc->libs);
	free(tc);
}
