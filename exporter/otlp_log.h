/* SPDX-License-Identifier: Apache-2.0 */
/* Where the OTLP exporter's messages go: a caller's function (tests), or the logger. */
#ifndef MM_EXPORTER_OTLP_LOG_H
#define MM_EXPORTER_OTLP_LOG_H

#include <stdarg.h>
#include <stdio.h>

#include "policy/util/log.h"

/* Levels as in <syslog.h>: LOG_ERR 3, LOG_WARNING 4, LOG_INFO 6, LOG_DEBUG 7 */
typedef void (*otlp_log_fn)(void *ctx, int level, const char *msg);

struct otlp_logger {
	otlp_log_fn fn; /* NULL: policy/util/log.h */
	void *ctx;
};

static inline void otlp_log(const struct otlp_logger *l, int level,
			    const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline void otlp_log(const struct otlp_logger *l, int level,
			    const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (l->fn)
		l->fn(l->ctx, level, msg);
	else
		log__msg(level, "otlp", "%s\n", msg);
}

#endif /* MM_EXPORTER_OTLP_LOG_H */
