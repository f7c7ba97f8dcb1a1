/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one JSON writer of the tree (the debug socket's --json output, route
 * and target dumps, `milometer check --json`): strings escaped per RFC 8259
 * section 7 (quotation mark, reverse solidus, every control character),
 * invalid UTF-8 replaced by U+FFFD (JSON text is UTF-8, RFC 8259 section
 * 8.1: a process name or a file path may be anything), numbers that JSON
 * can carry (NaN and infinities become null).
 */
#ifndef MM_EXPORTER_JSON_OUT_H
#define MM_EXPORTER_JSON_OUT_H

#include <stdio.h>

/* "s" quoted and escaped; NULL prints null. */
void json_out__str(FILE *f, const char *s);
/* "key": (the key escaped as a string) */
void json_out__key(FILE *f, const char *key);
/* v with round-trip precision, integers without a fraction; else null. */
void json_out__double(FILE *f, double v);

#endif /* MM_EXPORTER_JSON_OUT_H */
