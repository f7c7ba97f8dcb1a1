// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/config/options.h"
#include "agent/targets.h"
#include "bpf/milometer.h"
#include "policy/util/json_out.h"
#include "milometer.skel.h"
#include "policy/util/log.h"

#define CGROUP2_ROOTS "/sys/fs/cgroup/unified", "/sys/fs/cgroup"

/* comm is the executable's basename cut to 15 bytes, as the kernel keeps it */
static void comm_of(const char *exe, char comm[MM_COMM_LEN])
{
	const char *base = strrchr(exe, '/');

	memset(comm, 0, MM_COMM_LEN);
	strncpy(comm, base ? base + 1 : exe, MM_COMM_LEN - 1);
}

static int read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

/* mm_target_bits, mapped: BPF sets bits at fork/exec concurrently. */
static uint64_t *target_bits;

/*
 * A process already traced keeps its source; one found in a proxy pod's
 * cgroup (gw set) takes that pod's Gateway even if its name matched first.
 */
static int add_target(struct milometer_bpf *skel, __u32 pid, __u32 source,
		      __u32 gw)
{
	int fd = bpf_map__fd(skel->maps.mm_targets);
	struct mm_target t = { .source = source, .gw = gw }, old;

	if (bpf_map_update_elem(fd, &pid, &t, BPF_NOEXIST)) {
		if (errno != EEXIST)
			return -errno;
		if (gw && !bpf_map_lookup_elem(fd, &pid, &old) &&
		    old.gw != gw) {
			old.gw = gw;
			bpf_map_update_elem(fd, &pid, &old, BPF_EXIST);
		}
	}
	if (target_bits && pid / 64 < MM_TARGET_WORDS)
		__atomic_fetch_or(&target_bits[pid / 64], 1ULL << (pid % 64),
				  __ATOMIC_RELAXED);
	return 0;
}

static int map_target_bits(struct milometer_bpf *skel)
{
	size_t len = MM_TARGET_WORDS * sizeof(uint64_t);
	void *p;

	if (target_bits)
		munmap(target_bits, len);
	target_bits = NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 bpf_map__fd(skel->maps.mm_target_bits), 0);
	if (p == MAP_FAILED) {
		pr_err("cannot map mm_target_bits: %s\n", strerror(errno));
		return -errno;
	}
	target_bits = p;
	return 0;
}

static bool exe_matches(const struct agent_opts *o, const char *pid)
{
	char path[300], comm[32], exe[PATH_MAX], want[MM_COMM_LEN];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%s/comm", pid);
	if (read_small(path, comm, sizeof(comm)))
		return false;
	snprintf(path, sizeof(path), "/proc/%s/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	for (size_t i = 0; i < o->nproxy_exe; i++) {
		const char *e = o->proxy_exe[i];

		if (strchr(e, '/')) {
			/* a path names exactly that binary */
			if (n > 0 && !strcmp(exe, e))
				return true;
			continue;
		}
		comm_of(e, want);
		if (!strcmp(comm, want))
			return true;
	}
	return false;
}

static pid_t ppid_of(const char *pid)
{
	char path[300], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	if (read_small(path, buf, sizeof(buf)))
		return -1;
	/* comm may hold spaces and parentheses: parse after the last ')' */
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	return strtol(p + 3, NULL, 10);
}

static bool pid_selected(const struct agent_opts *o, pid_t pid)
{
	for (size_t i = 0; i < o->nproxy_pid; i++)
		if (o->proxy_pid[i] == pid)
			return true;
	return false;
}

static int scan_cgroup_procs(struct milometer_bpf *skel, const char *cg,
			     __u32 gw)
{
	char path[PATH_MAX + 16];
	FILE *f;
	unsigned pid;
	int n = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fscanf(f, "%u", &pid) == 1)
		if (!add_target(skel, pid, MM_TGT_CGROUP, gw))
			n++;
	fclose(f);
	return n;
}

/* A cgroup v2 id is the inode number of its directory (kernfs node id). */
static int resolve_cgroup(const char *cg, char *dir, size_t len, __u64 *id)
{
	static const char *const roots[] = { CGROUP2_ROOTS };
	struct stat st;

	if (cg[0] == '/' && !stat(cg, &st) && S_ISDIR(st.st_mode)) {
		snprintf(dir, len, "%s", cg);
		*id = st.st_ino;
		return 0;
	}
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(dir, len, "%s/%s", roots[i],
			 cg[0] == '/' ? cg + 1 : cg);
		if (!stat(dir, &st) && S_ISDIR(st.st_mode)) {
			char probe[PATH_MAX + 16];

			/* cgroup v1 hierarchies have no cgroup.controllers */
			snprintf(probe, sizeof(probe), "%s/cgroup.procs", dir);
			if (access(probe, R_OK))
				continue;
			*id = st.st_ino;
			return 0;
		}
	}
	return -ENOENT;
}

int targets__add_cgroup(struct milometer_bpf *skel, const char *dir,
			uint64_t id, uint32_t gw)
{
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.mm_target_cgroups), &id,
				&gw, BPF_ANY))
		return -errno;
	/* processes already running there; new ones are caught at exec */
	return scan_cgroup_procs(skel, dir, gw);
}

int targets__remove_cgroup(struct milometer_bpf *skel, uint64_t id)
{
	/* its processes, if any are left, stay until they exit */
	if (bpf_map_delete_elem(bpf_map__fd(skel->maps.mm_target_cgroups),
				&id) &&
	    errno != ENOENT)
		return -errno;
	return 0;
}

int targets__rescan(struct milometer_bpf *skel, const struct agent_opts *o)
{
	struct dirent *de;
	DIR *d = opendir("/proc");
	int n;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		pid_t pid, pp;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = atoi(de->d_name);
		if (o->nproxy_exe && exe_matches(o, de->d_name)) {
			add_target(skel, pid, MM_TGT_COMM, 0);
			continue;
		}
		if (!o->nproxy_pid)
			continue;
		/* a selected pid and every descendant of it */
		for (pp = pid; pp > 1;) {
			char buf[16];

			if (pid_selected(o, pp)) {
				add_target(skel, pid,
					   pp == pid ? MM_TGT_PID : MM_TGT_FORK,
					   0);
				break;
			}
			snprintf(buf, sizeof(buf), "%d", pp);
			pp = ppid_of(buf);
		}
	}
	closedir(d);
	for (size_t i = 0; i < o->nproxy_cgroup; i++) {
		char dir[PATH_MAX];
		__u64 id;

		if (!resolve_cgroup(o->proxy_cgroup[i], dir, sizeof(dir), &id))
			scan_cgroup_procs(skel, dir, 0);
	}
	n = targets__count(skel);
	return n;
}

int targets__init(struct milometer_bpf *skel, const struct agent_opts *o)
{
	int comms = bpf_map__fd(skel->maps.mm_target_comms);
	int cgs = bpf_map__fd(skel->maps.mm_target_cgroups);
	__u32 one = 1, default_gw = 0;
	int err = map_target_bits(skel);

	if (err)
		return err;
	for (size_t i = 0; i < o->nproxy_exe; i++) {
		char comm[MM_COMM_LEN];

		comm_of(o->proxy_exe[i], comm);
		if (bpf_map_update_elem(comms, comm, &one, BPF_ANY)) {
			pr_err("cannot add proxy name %s: %s\n", comm,
			       strerror(errno));
			return -errno;
		}
	}
	for (size_t i = 0; i < o->nproxy_cgroup; i++) {
		char dir[PATH_MAX];
		__u64 id;

		if (resolve_cgroup(o->proxy_cgroup[i], dir, sizeof(dir), &id)) {
			pr_err("--proxy-cgroup %s: no such cgroup v2 directory (give a path under /sys/fs/cgroup or /sys/fs/cgroup/unified)\n",
			       o->proxy_cgroup[i]);
			return -ENOENT;
		}
		/* --proxy-cgroup: the default route table */
		if (bpf_map_update_elem(cgs, &id, &default_gw, BPF_ANY))
			return -errno;
	}
	for (size_t i = 0; i < o->nproxy_pid; i++) {
		if (kill(o->proxy_pid[i], 0) && errno == ESRCH) {
			pr_err("--proxy-pid %d: no such process\n",
			       o->proxy_pid[i]);
			return -ESRCH;
		}
	}
	return targets__rescan(skel, o) < 0 ? -EIO : 0;
}

int targets__count(struct milometer_bpf *skel)
{
	int fd = bpf_map__fd(skel->maps.mm_targets), n = 0;
	__u32 key, next;
	__u32 *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		n++;
	}
	return n;
}

void targets__dump(struct milometer_bpf *skel, FILE *out, int json)
{
	static const char *const src[] = { "?", "pid", "exe", "cgroup",
					   "fork" };
	int fd = bpf_map__fd(skel->maps.mm_targets);
	__u32 key, next, *prev = NULL;
	bool first = true;

	if (json)
		fputc('[', out);
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		struct mm_target t;
		char path[64], comm[32] = "?";

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &t))
			continue;
		snprintf(path, sizeof(path), "/proc/%u/comm", key);
		read_small(path, comm, sizeof(comm));
		if (json) {
			/* comm is whatever the process named itself */
			fprintf(out,
				"%s{\"pid\":%u,\"source\":\"%s\",\"gateway_slot\":%u,\"comm\":",
				first ? "" : ",", key,
				src[t.source < 5 ? t.source : 0], t.gw);
			json_out__str(out, comm);
			fputc('}', out);
		} else
			fprintf(out, "%-8u %-7s %s\n", key,
				src[t.source < 5 ? t.source : 0], comm);
		first = false;
	}
	if (json)
		fputs("]\n", out);
}
