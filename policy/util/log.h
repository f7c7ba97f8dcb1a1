/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one logger: "milometer: MODULE: message" on stderr (the journal or
 * the pod log), with syslog's levels, so -v can show debug lines and
 * nothing else changes. A file names its module before including this:
 *
 *   #define LOG_MODULE "k8s"
 *   #include "policy/util/log.h"
 *   pr_warn("%s: listed %zu objects\n", resource, n);
 *
 * The format keeps its trailing newline, as the kernel's pr_*() do. What can
 * repeat per request or per event goes through log__ratelimit(): logged at
 * the 1st, 2nd, 4th, 8th ... occurrence, with the count, never a flood.
 */
#ifndef MM_POLICY_UTIL_LOG_H
#define MM_POLICY_UTIL_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <syslog.h>

#ifndef LOG_MODULE
#define LOG_MODULE NULL /* the agent itself: "milometer: message" */
#endif

/* Messages above level are dropped (default LOG_INFO; -v: LOG_DEBUG). */
void log__set_level(int level);
bool log__enabled(int level);
void log__msg(int level, const char *module, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void log__vmsg(int level, const char *module, const char *fmt, va_list ap);
/* Where messages go instead of stderr (tests); NULL: stderr again. */
typedef void (*log_sink_fn)(void *ctx, int level, const char *line);
void log__set_sink(log_sink_fn fn, void *ctx);

/* One per message that can repeat per request or per event. */
struct log_ratelimit {
	uint64_t count; /* occurrences so far */
};
/* Count one occurrence; true when this one is to be logged (a power of 2). */
bool log__ratelimit(struct log_ratelimit *rl, uint64_t *count);

#define pr_err(...)   log__msg(LOG_ERR, LOG_MODULE, __VA_ARGS__)
#define pr_warn(...)  log__msg(LOG_WARNING, LOG_MODULE, __VA_ARGS__)
#define pr_info(...)  log__msg(LOG_INFO, LOG_MODULE, __VA_ARGS__)
#define pr_debug(...) log__msg(LOG_DEBUG, LOG_MODULE, __VA_ARGS__)
/* pr_warn() at the 1st, 2nd, 4th ... occurrence, "(N times)" appended. */
#define pr_warn_ratelimited(rl, fmt, ...)                                      \
	do {                                                                   \
		uint64_t ___n;                                                 \
		if (log__ratelimit(rl, &___n))                                 \
			log__msg(LOG_WARNING, LOG_MODULE,                      \
				 fmt " (%llu times)\n", ##__VA_ARGS__,         \
				 (unsigned long long)___n);                    \
	} while (0)

#endif /* MM_POLICY_UTIL_LOG_H */
