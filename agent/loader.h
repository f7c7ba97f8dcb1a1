/* SPDX-License-Identifier: Apache-2.0 */
/* Load, attach, pin and detach the data path's BPF programs and maps. */
#ifndef MM_AGENT_LOADER_H
#define MM_AGENT_LOADER_H

#include <stdbool.h>
#include <stdint.h>

struct milometer_bpf;
struct bpf_object;

struct loader_opts {
	const char *pin_dir; /* maps and programs pinned here while running */
	uint32_t ringbuf_bytes;
	uint32_t max_connections;
	const char *capture; /* "auto", "sock" or "sys-exit" */
};

/*
 * Make pin_dir and hold an exclusive flock on it until
 * loader__unlock_pin_dir() or exit (a crash releases it too): a second
 * agent on the same directory fails here with -EBUSY and a message naming
 * the running agent's pid, before it touches the first one's pins.
 */
int loader__lock_pin_dir(const char *pin_dir);
/* Remove pin_dir if empty and drop the lock; nothing when not held. */
void loader__unlock_pin_dir(const char *pin_dir);
/*
 * Mount tracefs and bpffs when missing, open, size, load and attach every
 * program, pin maps and programs. Returns 0 or -errno with a message on
 * stderr that says what to fix.
 */
int loader__start(const struct loader_opts *o, struct milometer_bpf **out);
/*
 * The key and value sizes of mm_conns in the BPF object (opened, not
 * loaded): what sizing a connection cap from memory needs before loading.
 */
int loader__conn_sizes(uint32_t *key_size, uint32_t *value_size);
/* Detach, unpin everything under pin_dir, free. */
void loader__stop(struct milometer_bpf *skel, const char *pin_dir);
/* Remove pins left by an agent that did not exit cleanly. */
void loader__clean_pins(const char *pin_dir);
/* The capture mode loaded: "sock" or "sys-exit" (enum mm_capture_mode). */
const char *loader__capture_mode(void);
/* The data path build loaded: "bpf_loop" (5.17+) or "bounded" (5.10+). */
const char *loader__loops(void);
/* Parser steps per bpf_loop callback loaded (bpf/milometer.h MM_PARSE_STEPS_*). */
unsigned int loader__parse_steps(void);
/* The same as enum mm_capture_mode, for objects loaded beside the main one. */
int loader__mode(void);
/*
 * MILOMETER_BPF_LOG_LEVEL (with -v): the verifier log level of obj's
 * programs, e.g. 4 for each program's instruction count and stack depth.
 */
void loader__log_level(struct bpf_object *obj);
/*
 * Pin under pin_dir the maps of obj whose names start with map_prefix and
 * its loaded programs; loader__unpin() removes exactly those pins.
 */
int loader__pin(struct bpf_object *obj, const char *pin_dir,
		const char *map_prefix);
void loader__unpin(struct bpf_object *obj, const char *pin_dir,
		   const char *map_prefix);
/* Programs attached / expected. */
void loader__attached(const struct milometer_bpf *skel, int *attached,
		      int *total);

#endif /* MM_AGENT_LOADER_H */
