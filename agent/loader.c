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
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define LOG_MODULE "loader"
#include "agent/loader.h"
#include "bpf/milometer.h"
#include "milometer.skel.h"
#include "milometer_bl.skel.h"
#include "policy/util/log.h"

#define BPF_FS_MAGIC_  0xcafe4a11
#define TRACEFS_MAGIC_ 0x74726163

static enum mm_capture_mode loaded_mode;
/* the bounded-loop build of the data path is loaded (bpf/compat.bpf.h) */
static bool loaded_bounded;
/* parser steps per bpf_loop callback loaded (mm_parse_steps) */
static unsigned int loaded_steps;
/* the pin directory, opened and flock()ed while this agent runs */
static int pin_lock_fd = -1;

/*
 * libbpf's messages at the logger's levels (-v: its debug ones too), written
 * as they come: they carry their own "libbpf: " prefix, and a verifier log
 * is one message far longer than a log line.
 */
static int print_fn(enum libbpf_print_level level, const char *fmt,
		    va_list args)
{
	int lvl = level == LIBBPF_WARN   ? LOG_WARNING
		  : level == LIBBPF_INFO ? LOG_INFO
					 : LOG_DEBUG;

	if (!log__enabled(lvl))
		return 0;
	return vfprintf(stderr, fmt, args);
}

static int mount_if_missing(const char *dir, const char *type, long magic)
{
	struct statfs st;

	if (!statfs(dir, &st) && st.f_type == magic)
		return 0;
	if (mkdir(dir, 0700) && errno != EEXIST) {
		pr_err("cannot create %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	if (mount(type, dir, type, 0, NULL)) {
		int err = -errno;

		pr_err("cannot mount %s on %s: %s (run as "
		       "root with CAP_SYS_ADMIN, or mount it on the node: in "
		       "a pod, the hostPath volume shows the node's)\n",
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

static void remove_pins(const char *pin_dir)
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
}

void loader__clean_pins(const char *pin_dir)
{
	remove_pins(pin_dir);
	rmdir(pin_dir);
}

/* The pid /proc/locks gives for the flock on st's inode, or 0. */
static long lock_holder(const struct stat *st)
{
	char line[256];
	long pid = 0;
	FILE *f = fopen("/proc/locks", "r");

	if (!f)
		return 0;
	while (!pid && fgets(line, sizeof(line), f)) {
		unsigned int maj, min;
		unsigned long long ino;
		char kind[16];
		long p;

		/* "1: FLOCK  ADVISORY  WRITE 1234 00:2a:5678 0 EOF" */
		if (sscanf(line, "%*s %15s %*s %*s %ld %x:%x:%llu", kind, &p,
			   &maj, &min, &ino) == 5 &&
		    !strcmp(kind, "FLOCK") && maj == major(st->st_dev) &&
		    min == minor(st->st_dev) &&
		    ino == (unsigned long long)st->st_ino)
			pid = p;
	}
	fclose(f);
	return pid;
}

/* What pinning and loading need first: root, and bpffs and tracefs mounted. */
static int prepare_host(void)
{
	if (geteuid() != 0) {
		pr_err("run needs root (loading BPF programs)\n");
		return -EPERM;
	}
	return mount_fs();
}

int loader__lock_pin_dir(const char *pin_dir)
{
	int err;

	err = prepare_host();
	if (err)
		return err;
	/*
	 * bpffs holds no regular files, so the lock is on the directory
	 * itself; the kernel drops it when the agent exits or crashes. A
	 * directory removed and made again between open() and flock() (an
	 * agent exiting) is a different inode: look again.
	 */
	for (int tries = 0; tries < 5; tries++) {
		struct stat held, now;
		int fd;

		if (mkdir(pin_dir, 0700) && errno != EEXIST) {
			err = -errno;
			pr_err("cannot create the pin directory %s: %s (--pin-dir must be on a bpffs, e.g. under /sys/fs/bpf)\n",
			       pin_dir, strerror(-err));
			return err;
		}
		fd = open(pin_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 && errno != ENOENT) {
			err = -errno;
			pr_err("cannot open the pin directory %s: %s\n",
			       pin_dir, strerror(-err));
			return err;
		}
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			long pid;

			err = -errno;
			fstat(fd, &held);
			close(fd);
			if (err != -EWOULDBLOCK) {
				pr_err("cannot lock the pin directory %s: %s\n",
				       pin_dir, strerror(-err));
				return err;
			}
			pid = lock_holder(&held);
			if (pid > 0)
				pr_err("another agent (pid %ld) is running with pin directory %s: stop it, or give this one another --pin-dir\n",
				       pid, pin_dir);
			else
				pr_err("another agent (pid not visible from here) is running with pin directory %s: stop it, or give this one another --pin-dir\n",
				       pin_dir);
			return -EBUSY;
		}
		if (!fstat(fd, &held) && !stat(pin_dir, &now) &&
		    held.st_dev == now.st_dev && held.st_ino == now.st_ino) {
			pin_lock_fd = fd;
			return 0;
		}
		close(fd);
	}
	pr_err("the pin directory %s keeps being removed while this agent locks it: is another agent starting and stopping on it?\n",
	       pin_dir);
	return -EAGAIN;
}

void loader__unlock_pin_dir(const char *pin_dir)
{
	if (pin_lock_fd < 0)
		return;
	/* made by the lock: gone unless something was pinned since */
	rmdir(pin_dir);
	close(pin_lock_fd);
	pin_lock_fd = -1;
}

int loader__pin(struct bpf_object *obj, const char *pin_dir,
		const char *map_prefix)
{
	struct bpf_program *prog;
	struct bpf_map *map;
	char path[512];
	int err;

	if (mkdir(pin_dir, 0700) && errno != EEXIST)
		return -errno;
	bpf_object__for_each_map(map, obj) {
		/* .rodata/.bss internal maps are not worth a pin */
		if (strncmp(bpf_map__name(map), map_prefix, strlen(map_prefix)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", pin_dir,
			 bpf_map__name(map));
		err = bpf_map__pin(map, path);
		if (err)
			return err;
	}
	bpf_object__for_each_program(prog, obj) {
		if (!bpf_program__autoload(prog))
			continue;
		snprintf(path, sizeof(path), "%s/%s", pin_dir,
			 bpf_program__name(prog));
		err = bpf_program__pin(prog, path);
		if (err)
			return err;
	}
	return 0;
}

void loader__unpin(struct bpf_object *obj, const char *pin_dir,
		   const char *map_prefix)
{
	struct bpf_program *prog;
	struct bpf_map *map;
	char path[512];

	bpf_object__for_each_map(map, obj) {
		if (strncmp(bpf_map__name(map), map_prefix, strlen(map_prefix)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", pin_dir,
			 bpf_map__name(map));
		unlink(path);
	}
	bpf_object__for_each_program(prog, obj) {
		snprintf(path, sizeof(path), "%s/%s", pin_dir,
			 bpf_program__name(prog));
		unlink(path);
	}
}

static bool has_tp_btf(const char *name)
{
	return libbpf_find_vmlinux_btf_id(name, BPF_TRACE_RAW_TP) > 0;
}

static bool has_helper(enum bpf_func_id id)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, id, NULL) > 0;
}

/*
 * What every mode needs, checked before load so that an old kernel gets a
 * sentence naming what is missing instead of a verifier log; and which
 * build of the data path it takes: the bpf_loop one when the kernel has
 * bpf_loop, task storage and BTF task pointers (5.17+), else the bounded
 * one (5.10+). MILOMETER_BPF_LOOPS=bounded or bpf_loop forces one.
 */
static int check_kernel(bool *bounded)
{
	static const struct {
		enum bpf_func_id id;
		const char *what;
	} helpers[] = {
		{ BPF_FUNC_loop, "bpf_loop (Linux 5.17)" },
		{ BPF_FUNC_task_storage_get,
		  "task local storage (Linux 5.11)" },
		{ BPF_FUNC_get_current_task_btf,
		  "bpf_get_current_task_btf (Linux 5.11)" },
	};
	const char *force = getenv("MILOMETER_BPF_LOOPS");
	const char *lacks = NULL;

	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		pr_err("this kernel has no BTF (/sys/kernel/btf/vmlinux): "
		       "milometer needs Linux 5.10 or newer built with CONFIG_DEBUG_INFO_BTF=y "
		       "(every mainstream distribution kernel since 2021 has it; see docs/kernel-support.md)\n");
		return -ENOTSUP;
	}
	if (!has_helper(BPF_FUNC_ringbuf_reserve)) {
		pr_err("this kernel lacks BPF ring buffers (Linux 5.8); milometer needs Linux 5.10 or newer\n");
		return -ENOTSUP;
	}
	if (!has_tp_btf("inet_sock_set_state") || !has_tp_btf("sys_exit")) {
		pr_err("this kernel's BTF has no sock:inet_sock_set_state or raw_syscalls:sys_exit tracepoint\n");
		return -ENOTSUP;
	}
	for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]) && !lacks;
	     i++)
		if (!has_helper(helpers[i].id))
			lacks = helpers[i].what;
	if (force && !strcmp(force, "bpf_loop") && lacks) {
		pr_err("MILOMETER_BPF_LOOPS=bpf_loop, but this kernel lacks %s; unset it to load the bounded-loop build\n",
		       lacks);
		return -ENOTSUP;
	}
	if (force && strcmp(force, "bpf_loop") && strcmp(force, "bounded")) {
		pr_err("MILOMETER_BPF_LOOPS=%s: use bpf_loop or bounded\n",
		       force);
		return -EINVAL;
	}
	*bounded = force ? !strcmp(force, "bounded") : lacks != NULL;
	if (*bounded)
		pr_info("data path: the bounded-loop build (%s), "
			"thread links in a hash by thread id, the task by probe reads; "
			"sys-exit capture only, no HTTP/2\n",
			lacks ? lacks : "MILOMETER_BPF_LOOPS=bounded");
	else
		pr_info("data path: the bpf_loop build (bpf_loop, task local storage, BTF task pointers)\n");
	return 0;
}

/* Socket tracepoints when the kernel has them (6.3+), else sys_exit. */
static int choose_mode(const char *want, bool bounded,
		       enum mm_capture_mode *mode)
{
	bool sock = !bounded && has_tp_btf("sock_recv_length") &&
		    has_tp_btf("sock_send_length");

	if (!want || !strcmp(want, "auto")) {
		*mode = sock ? MM_CAPTURE_SOCK_TP : MM_CAPTURE_SYS_EXIT;
		return 0;
	}
	if (!strcmp(want, "sys-exit")) {
		*mode = MM_CAPTURE_SYS_EXIT;
		return 0;
	}
	if (!sock && bounded) {
		pr_err("--capture sock needs the bpf_loop build of the data path (Linux 6.3+ has it); use --capture auto or sys-exit\n");
		return -ENOTSUP;
	}
	if (!sock) {
		pr_err("--capture sock needs the sock:sock_recv_length and sock:sock_send_length tracepoints (Linux 6.3+); use --capture auto or sys-exit\n");
		return -ENOTSUP;
	}
	*mode = MM_CAPTURE_SOCK_TP;
	return 0;
}

/* MILOMETER_BPF_LOG_LEVEL=4 with -v: each program's verifier statistics */
void loader__log_level(struct bpf_object *obj)
{
	const char *env = getenv("MILOMETER_BPF_LOG_LEVEL");
	struct bpf_program *prog;

	if (!env)
		return;
	bpf_object__for_each_program(prog, obj)
		bpf_program__set_log_level(prog, atoi(env));
}

int loader__mode(void)
{
	return loaded_mode;
}

const char *loader__loops(void)
{
	return loaded_bounded ? "bounded" : "bpf_loop";
}

unsigned int loader__parse_steps(void)
{
	return loaded_steps;
}

/*
 * Parser steps per callback to try first: MM_PARSE_STEPS_DEFAULT, or
 * MILOMETER_BPF_PARSE_STEPS (1 to MM_PARSE_STEPS_MAX; more parse a little
 * faster where the node's verifier takes them).
 */
static int parse_steps_wanted(unsigned int *steps)
{
	const char *env = getenv("MILOMETER_BPF_PARSE_STEPS");
	char *end;
	unsigned long v;

	*steps = MM_PARSE_STEPS_DEFAULT;
	if (!env)
		return 0;
	errno = 0;
	v = strtoul(env, &end, 10);
	if (errno || end == env || *end || v < 1 || v > MM_PARSE_STEPS_MAX) {
		pr_err("MILOMETER_BPF_PARSE_STEPS=%s: use 1 to %d\n", env,
		       MM_PARSE_STEPS_MAX);
		return -EINVAL;
	}
	*steps = v;
	return 0;
}

/* The skeleton of milometer.bpf.o over the bytes of the build chosen. */
static struct milometer_bpf *open_object(bool bounded)
{
	struct milometer_bpf *obj = calloc(1, sizeof(*obj));
	int err;

	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	err = milometer_bpf__create_skeleton(obj);
	/* the same maps, programs and sections by name (Makefile) */
	if (!err && bounded)
		obj->skeleton->data = (void *)milometer_bl_bpf__elf_bytes(
			&obj->skeleton->data_sz);
	if (!err)
		err = bpf_object__open_skeleton(obj->skeleton, NULL);
	if (err) {
		milometer_bpf__destroy(obj);
		errno = -err;
		return NULL;
	}
	return obj;
}

const char *loader__capture_mode(void)
{
	switch (loaded_mode) {
	case MM_CAPTURE_SOCK_TP:
		return "sock";
	case MM_CAPTURE_SYS_EXIT:
		return "sys-exit";
	}
	return "none";
}

/* The object of the build chosen, set up for O, not loaded yet. */
static struct milometer_bpf *open_configured(const struct loader_opts *o,
					     unsigned int steps)
{
	struct milometer_bpf *skel = open_object(loaded_bounded);

	if (!skel) {
		int err = errno;

		pr_err("cannot open BPF object: %s\n", strerror(err));
		/* the caller returns -errno; the logger may have changed it */
		errno = err;
		return NULL;
	}
	skel->rodata->mm_parse_steps = steps;
	bpf_map__set_max_entries(skel->maps.mm_events, o->ringbuf_bytes);
	/* tests fill mm_targets with a handful of processes */
	if (getenv("MILOMETER_TEST_MAX_TARGETS"))
		bpf_map__set_max_entries(
			skel->maps.mm_targets,
			strtoul(getenv("MILOMETER_TEST_MAX_TARGETS"), NULL,
				10));
	/* wake the ring's reader at 1/8 full; below that it reads every 50 ms */
	skel->rodata->mm_wakeup_bytes = o->ringbuf_bytes / 8;
	skel->rodata->mm_capture_mode = loaded_mode;
	if (loaded_mode == MM_CAPTURE_SOCK_TP) {
		/* state lives in the sockets; the fallback's hash stays tiny */
		bpf_map__set_max_entries(skel->maps.mm_conns, 1);
		bpf_program__set_autoload(skel->progs.mm_sys_exit, false);
		/* tail-called by mm_sock_recv/mm_sock_send, never attached */
		bpf_program__set_autoattach(skel->progs.mm_sock_io, false);
		bpf_program__set_autoload(skel->progs.mm_fb_io, false);
	} else {
		bpf_program__set_autoload(skel->progs.mm_sock_io, false);
		/* tail-called by mm_sys_exit, never attached */
		bpf_program__set_autoattach(skel->progs.mm_fb_io, false);
		bpf_map__set_max_entries(skel->maps.mm_conns,
					 o->max_connections);
		bpf_program__set_autoload(skel->progs.mm_sock_recv, false);
		bpf_program__set_autoload(skel->progs.mm_sock_send, false);
	}

	loader__log_level(skel->obj);
	return skel;
}

int loader__start(const struct loader_opts *o, struct milometer_bpf **out)
{
	struct milometer_bpf *skel = NULL;
	int err;

	libbpf_set_print(print_fn);
	*out = NULL;
	err = prepare_host();
	if (err)
		return err;
	err = check_kernel(&loaded_bounded);
	if (err)
		return err;
	err = choose_mode(o->capture, loaded_bounded, &loaded_mode);
	if (err)
		return err;
	/* what an agent that crashed on this directory left behind */
	remove_pins(o->pin_dir);

	err = parse_steps_wanted(&loaded_steps);
	if (err)
		return err;
	for (;;) {
		skel = open_configured(o, loaded_steps);
		if (!skel)
			return -errno;
		err = milometer_bpf__load(skel);
		/* the verifier's 1M instructions: the same code, fewer steps */
		if (err != -E2BIG || loaded_steps == 1)
			break;
		pr_warn("this kernel's verifier found the data path too large (E2BIG) with %u parser steps per callback; loading it with %u\n",
			loaded_steps, loaded_steps - 1);
		milometer_bpf__destroy(skel);
		loaded_steps--;
	}
	if (err) {
		pr_err("loading BPF programs failed: %s\n"
		       "  (capture mode %s, loops %s); run with -v for the verifier log%s\n",
		       strerror(-err), loader__capture_mode(), loader__loops(),
		       loaded_mode == MM_CAPTURE_SOCK_TP
			       ? ", or try --capture sys-exit"
			       : "");
		goto cleanup;
	}
	{
		struct bpf_program *io = loaded_mode == MM_CAPTURE_SOCK_TP
						 ? skel->progs.mm_sock_io
						 : skel->progs.mm_fb_io;
		int fd = bpf_program__fd(io);
		__u32 zero = 0;

		err = bpf_map_update_elem(bpf_map__fd(skel->maps.mm_sock_progs),
					  &zero, &fd, BPF_ANY);
		if (err) {
			err = -errno;
			pr_err("cannot chain the capture hooks "
			       "to %s: %s\n",
			       bpf_program__name(io), strerror(-err));
			goto cleanup;
		}
	}
	err = milometer_bpf__attach(skel);
	if (err) {
		pr_err("attaching BPF programs failed: %s\n", strerror(-err));
		goto cleanup;
	}
	err = loader__pin(skel->obj, o->pin_dir, "mm_");
	if (err) {
		pr_err("pinning under %s failed: %s\n", o->pin_dir,
		       strerror(-err));
		goto cleanup;
	}
	*out = skel;
	return 0;
cleanup:
	milometer_bpf__destroy(skel);
	loader__clean_pins(o->pin_dir);
	return err;
}

int loader__conn_sizes(uint32_t *key_size, uint32_t *value_size)
{
	struct milometer_bpf *skel = milometer_bpf__open();

	if (!skel) {
		int err = -errno;

		pr_err("cannot open BPF object: %s\n", strerror(-err));
		return err;
	}
	*key_size = bpf_map__key_size(skel->maps.mm_conns);
	*value_size = bpf_map__value_size(skel->maps.mm_conns);
	milometer_bpf__destroy(skel);
	return 0;
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
		/*
		 * The other capture mode's programs are not loaded; a program
		 * only tail-called is not attached.
		 */
		if (!bpf_program__autoload(prog) ||
		    !bpf_program__autoattach(prog)) {
			i++;
			continue;
		}
		(*total)++;
		/* the skeleton keeps links in program order */
		if (i < skel->skeleton->prog_cnt &&
		    *skel->skeleton->progs[i].link)
			(*attached)++;
		i++;
	}
}
