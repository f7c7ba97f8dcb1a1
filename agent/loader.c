// SPDX-License-Identifier: Apache-2.0
/*
 * open -> size maps -> load -> attach -> pin, in the libbpf-bootstrap order.
 * Programs and maps are pinned under /sys/fs/bpf/milometer/ so that
 * `bpftool map dump pinned /sys/fs/bpf/milometer/mm_stats` works on a node;
 * links are not pinned, so a crashed agent leaves nothing attached, and a
 * clean exit (or the next start) removes the pins.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/loader.h"
#include "milometer.skel.h"

#define BPF_FS_MAGIC_ 0xcafe4a11
#define TRACEFS_MAGIC_ 0x74726163

static bool verbose;

static int print_fn(enum libbpf_print_level level, const char *fmt,
		    va_list args)
{
	if (level == LIBBPF_DEBUG && !verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static int mount_if_missing(const char *dir, const char *type, long magic)
{
	struct statfs st;

	if (!statfs(dir, &st) && st.f_type == magic)
		return 0;
	if (mkdir(dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "milometer: cannot create %s: %s\n", dir,
			strerror(errno));
		return -errno;
	}
	if (mount(type, dir, type, 0, NULL)) {
		int err = -errno;

		fprintf(stderr, "milometer: cannot mount %s on %s: %s (run as root)\n",
			type, dir, strerror(errno));
		return err;
	}
	return 0;
}

static int mount_fs(void)
{
	struct statfs st;
	int err;

	/* tracepoints attach through tracefs event ids */
	if (statfs("/sys/kernel/tracing", &st) || st.f_type != TRACEFS_MAGIC_) {
		if (!statfs("/sys/kernel/debug/tracing", &st) &&
		    st.f_type == TRACEFS_MAGIC_)
			goto bpffs;
		err = mount_if_missing("/sys/kernel/tracing", "tracefs",
				       TRACEFS_MAGIC_);
		if (err)
			return err;
	}
bpffs:
	return mount_if_missing("/sys/fs/bpf", "bpf", BPF_FS_MAGIC_);
}

void loader__clean_pins(const char *pin_dir)
{
	char path[512];
	struct dirent *de;
	DIR *d = opendir(pin_dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", pin_dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(pin_dir);
}

static int pin_all(struct milometer_bpf *skel, const char *pin_dir)
{
	struct bpf_program *prog;
	struct bpf_map *map;
	char path[512];
	int err;

	if (mkdir(pin_dir, 0700) && errno != EEXIST)
		return -errno;
	bpf_object__for_each_map(map, skel->obj) {
		/* .rodata/.bss internal maps are not worth a pin */
		if (strncmp(bpf_map__name(map), "mm_", 3))
			continue;
		snprintf(path, sizeof(path), "%s/%s", pin_dir, bpf_map__name(map));
		err = bpf_map__pin(map, path);
		if (err)
			return err;
	}
	bpf_object__for_each_program(prog, skel->obj) {
		snprintf(path, sizeof(path), "%s/%s", pin_dir,
			 bpf_program__name(prog));
		err = bpf_program__pin(prog, path);
		if (err)
			return err;
	}
	return 0;
}

int loader__start(const struct loader_opts *o, struct milometer_bpf **out)
{
	struct milometer_bpf *skel = NULL;
	int err;

	verbose = o->verbose;
	libbpf_set_print(print_fn);
	*out = NULL;
	if (geteuid() != 0) {
		fprintf(stderr, "milometer: run needs root (loading BPF programs)\n");
		return -EPERM;
	}
	err = mount_fs();
	if (err)
		return err;
	loader__clean_pins(o->pin_dir);

	skel = milometer_bpf__open();
	if (!skel) {
		err = -errno;
		fprintf(stderr, "milometer: cannot open BPF object: %s\n",
			strerror(-err));
		return err;
	}
	bpf_map__set_max_entries(skel->maps.mm_events, o->ringbuf_bytes);
	/* wake the agent at 1/8 full; below that its 50 ms drain timer reads */
	skel->rodata->mm_wakeup_bytes = o->ringbuf_bytes / 8;
	bpf_map__set_max_entries(skel->maps.mm_conns, o->max_connections);

	err = milometer_bpf__load(skel);
	if (err) {
		fprintf(stderr,
			"milometer: loading BPF programs failed: %s\n"
			"  the kernel needs BTF (/sys/kernel/btf/vmlinux), syscall tracepoints\n"
			"  (CONFIG_FTRACE_SYSCALLS), ring buffers and bpf_loop (5.17+); run with -v\n"
			"  for the verifier log\n",
			strerror(-err));
		goto cleanup;
	}
	err = milometer_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "milometer: attaching BPF programs failed: %s\n",
			strerror(-err));
		goto cleanup;
	}
	err = pin_all(skel, o->pin_dir);
	if (err) {
		fprintf(stderr, "milometer: pinning under %s failed: %s\n",
			o->pin_dir, strerror(-err));
		goto cleanup;
	}
	*out = skel;
	return 0;
cleanup:
	milometer_bpf__destroy(skel);
	loader__clean_pins(o->pin_dir);
	return err;
}

void loader__stop(struct milometer_bpf *skel, const char *pin_dir)
{
	if (!skel)
		return;
	milometer_bpf__detach(skel);
	milometer_bpf__destroy(skel);
	loader__clean_pins(pin_dir);
}

void loader__attached(const struct milometer_bpf *skel, int *attached,
		      int *total)
{
	struct bpf_program *prog;
	int i = 0;

	*attached = *total = 0;
	if (!skel)
		return;
	bpf_object__for_each_program(prog, skel->obj) {
		/* reached by tail call, never attached itself */
		if (!strcmp(bpf_program__name(prog), "mm_io_exit")) {
			i++;
			continue;
		}
		(*total)++;
		/* the skeleton keeps links in program order */
		if (i < skel->skeleton->prog_cnt && *skel->skeleton->progs[i].link)
			(*attached)++;
		i++;
	}
}
