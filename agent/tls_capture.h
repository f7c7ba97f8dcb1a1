/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TLS capture (feature gate TLSCapture): loads bpf/tls.bpf.c beside the main
 * object, sharing its maps, and attaches uprobes to the TLS libraries of the
 * proxy processes (agent/tls/discover.c finds them). Stopping detaches every
 * uprobe, unloads the programs, frees the object's own maps and removes its
 * pins: `bpftool prog/map/link show` and /sys/fs/bpf find nothing of it.
 */
#ifndef MM_AGENT_TLS_CAPTURE_H
#define MM_AGENT_TLS_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct milometer_bpf;
struct tls_capture;

struct tls_capture_stats {
	uint32_t processes; /* proxy processes with uprobes now */
	uint32_t libraries; /* library files (inodes) hooked so far */
	uint32_t uprobes;   /* uprobe links */
	uint32_t emulated; /* calls hooked at emulated instructions (no uretprobe) */
	uint32_t refused; /* libraries found without SSL_read/SSL_write */
	uint32_t failed;  /* attach failures (each logged) */
};

/*
 * Load and attach the fixed programs (socket naming, close), then scan the
 * proxy processes. Returns NULL with *err = -errno and a message on stderr.
 */
struct tls_capture *tls_capture__start(struct milometer_bpf *main,
				       const char *pin_dir,
				       uint32_t max_connections, int *err);
/*
 * Attach to TLS libraries of proxy processes not scanned yet (new workers,
 * new pods), detach from those gone; now: CLOCK_MONOTONIC ns (the 5 s
 * recheck); on_fork: a fork event asked for it (counted apart). Returns the
 * number of processes newly attached, or -errno.
 */
int tls_capture__scan(struct tls_capture *tc, uint64_t now, bool on_fork);
void tls_capture__stats(const struct tls_capture *tc,
			struct tls_capture_stats *st);
/*
 * ctl tls: the hooked libraries, the processes with their uprobe count and
 * the scans made, as lines or (json) one JSON object. NULL: TLS capture is
 * off.
 */
void tls_capture__dump(const struct tls_capture *tc, FILE *out, int json);
/* Detach, unload, unpin, free. NULL is fine. */
void tls_capture__stop(struct tls_capture *tc);

#endif /* MM_AGENT_TLS_CAPTURE_H */
