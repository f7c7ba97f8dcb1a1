/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Feature gates in the manner of Kubernetes (KEP-3920, component-base
 * featuregate): every gate has a name, a stage and a default; GA gates are
 * locked to their default. `--feature-gates=TLSCapture=true,HTTP2=false` and
 * the config file's `featureGates:` map override the defaults (flags win).
 * A config reload re-applies the overrides and notifies subscribers of every
 * gate whose state changed, so the loader can attach or detach the gate's
 * programs at run time. No libbpf here: unit-tested without root.
 */
#ifndef MM_AGENT_FEATURES_H
#define MM_AGENT_FEATURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum feature_stage {
	FEATURE_ALPHA,
	FEATURE_BETA,
	FEATURE_GA,
	FEATURE_DEPRECATED,
};

struct feature_spec {
	const char *name;
	enum feature_stage stage;
	bool def;
	bool lock_to_default; /* GA: an override is ignored with a warning */
	const char *desc;
};

#define FEATURES_MAX 32 /* overrides are bit masks */

/* Indexes into features__default_specs. */
enum feature_id {
	FEATURE_TLS_CAPTURE,
	FEATURE_HTTP2,
	FEATURE__COUNT,
};

extern const struct feature_spec features__default_specs[FEATURE__COUNT];

/* What a flag or a config file asked for: bit i = gate i of the registry. */
struct feature_overrides {
	uint32_t set;
	uint32_t val;
};

struct features;
struct doc_node;

/* Called for each gate whose state changed; a negative errno undoes it. */
typedef int (*feature_notify_fn)(void *ctx, int gate, bool enabled);
/* Warnings (GA or deprecated gate set); NULL: stderr. */
typedef void (*feature_warn_fn)(void *ctx, const char *msg);

const char *features__stage_name(enum feature_stage s);

/*
 * Parse one `--feature-gates` value: "A=true,B=false" with spaces around
 * names and values tolerated, true/false case-insensitive, empty items
 * skipped. Merged into *ov (a later flag wins, as in Kubernetes). An unknown
 * gate or a bad value is -EINVAL with err naming the known gates.
 */
int features__parse(const struct feature_spec *specs, size_t n, const char *s,
		    struct feature_overrides *ov, char *err, size_t errlen);
/* The config file's `featureGates:` map of name -> bool, same rules. */
int features__parse_node(const struct feature_spec *specs, size_t n,
			 const struct doc_node *node,
			 struct feature_overrides *ov, char *err,
			 size_t errlen);

/*
 * Re-read only `featureGates:` from a config file, for a reload (SIGHUP):
 * the rest of the file takes effect at the next start.
 */
int features__read_config(const struct feature_spec *specs, size_t n,
			  const char *path, struct feature_overrides *ov,
			  char *err, size_t errlen);

struct features *features__new(const struct feature_spec *specs, size_t n);
void features__free(struct features *f);
void features__set_warn(struct features *f, feature_warn_fn fn, void *ctx);
/* Up to 8 subscribers; gate -1 means every gate. */
int features__subscribe(struct features *f, int gate, feature_notify_fn fn,
			void *ctx);
/*
 * Effective state = defaults < cfg < flags (either may be NULL), locked
 * gates stay at their default. Subscribers hear about each change; when one
 * fails the gate keeps its previous state, so what is reported is what runs.
 * Returns how many gates changed, or the first subscriber error.
 */
int features__apply(struct features *f, const struct feature_overrides *cfg,
		    const struct feature_overrides *flags);

size_t features__count(const struct features *f);
const struct feature_spec *features__spec(const struct features *f, int gate);
bool features__enabled(const struct features *f, int gate);
int features__lookup(const struct features *f, const char *name);
/* "HTTP2=false(Alpha),TLSCapture=true(Alpha)" for the startup log. */
void features__summary(const struct features *f, char *buf, size_t len);
/* `milometer ctl features`: a table, or a JSON array with --json. */
void features__dump(const struct features *f, FILE *out, bool json);

#endif /* MM_AGENT_FEATURES_H */
