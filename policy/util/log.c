// SPDX-License-Identifier: Apache-2.0
/* The one logger: see log.h. */
#include <errno.h>
#include <stdio.h>

#include "policy/util/log.h"

static int max_level = LOG_INFO;
static log_sink_fn sink;
static void *sink_ctx;

void log__set_level(int level)
{
	__atomic_store_n(&max_level, level, __ATOMIC_RELAXED);
}

bool log__enabled(int level)
{
	return level <= __atomic_load_n(&max_level, __ATOMIC_RELAXED);
}

void log__set_sink(log_sink_fn fn, void *ctx)
{
	sink = fn;
	sink_ctx = ctx;
}

void log__vmsg(int level, const char *module, const char *fmt, va_list ap)
{
	char line[2048];
	int n, saved = errno; /* callers log, then return -errno */

	if (!log__enabled(level))
		return;
	n = snprintf(line, sizeof(line), "milometer: %s%s",
		     module ? module : "", module ? ": " : "");
	if (n >= 0 && (size_t)n < sizeof(line) &&
	    vsnprintf(line + n, sizeof(line) - n, fmt, ap) >=
		    (int)(sizeof(line) - n))
		line[sizeof(line) - 2] = '\n'; /* cut, still one line */
	if (sink)
		sink(sink_ctx, level, line);
	else
		fputs(line,
		      stderr); /* one write per line: threads don't interleave */
	errno = saved;
}

void log__msg(int level, const char *module, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log__vmsg(level, module, fmt, ap);
	va_end(ap);
}

bool log__ratelimit(struct log_ratelimit *rl, uint64_t *count)
{
	uint64_t n = __atomic_add_fetch(&rl->count, 1, __ATOMIC_RELAXED);

	*count = n;
	return (n & (n - 1)) == 0;
}
