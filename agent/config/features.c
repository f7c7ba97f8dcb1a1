// SPDX-License-Identifier: Apache-2.0
/*
 * Feature gates (KEP-3920). The rules follow Kubernetes' component-base
 * featuregate package: a comma-separated "Name=bool" list, unknown names are
 * an error, GA gates are locked to their default. Two choices differ from
 * it and are deliberate: a locked gate set to the other value is a warning
 * (Kubernetes refuses to start), because an old config file must not stop a
 * node agent after an upgrade; and values are only true/false in any case
 * (strconv.ParseBool also takes 1/t/F), because a YAML config says true.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent/config/features.h"
#include "policy/source/doc.h"
#include "policy/util/log.h"

/*
 * HTTP2 is Alpha (off): the user-space decoder is tested on its own, but the
 * in-kernel frame capture it needs is not built yet, and Kubernetes' bar for
 * Beta is "on by default because it is complete and tested end to end".
 */
const struct feature_spec features__default_specs[FEATURE__COUNT] = {
	[FEATURE_TLS_CAPTURE] = {
		.name = "TLSCapture", .stage = FEATURE_ALPHA, .def = false,
		.desc = "plaintext of TLS connections through uprobes on SSL_read/SSL_write",
	},
	[FEATURE_HTTP2] = {
		.name = "HTTP2", .stage = FEATURE_ALPHA, .def = false,
		.desc = "HTTP/2 and h2c exchanges (HPACK decoded in user space)",
	},
};

#define MAX_SUBS 8

struct features {
	const struct feature_spec *specs;
	size_t n;
	uint32_t on; /* bit i: gate i enabled */
	feature_warn_fn warn;
	void *warn_ctx;
	struct {
		int gate;
		feature_notify_fn fn;
		void *ctx;
	} subs[MAX_SUBS];
	size_t nsubs;
};

const char *features__stage_name(enum feature_stage s)
{
	switch (s) {
	case FEATURE_ALPHA:
		return "ALPHA";
	case FEATURE_BETA:
		return "BETA";
	case FEATURE_GA:
		return "GA";
	case FEATURE_DEPRECATED:
		return "DEPRECATED";
	}
	return "?";
}

static int spec_lookup(const struct feature_spec *specs, size_t n,
		       const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(specs[i].name) == len &&
		    !strncmp(specs[i].name, name, len))
			return (int)i;
	return -1;
}

static int known_err(const struct feature_spec *specs, size_t n, char *err,
		     size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int known_err(const struct feature_spec *specs, size_t n, char *err,
		     size_t errlen, const char *fmt, ...)
{
	size_t off;
	va_list ap;

	if (!err || !errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	off = strlen(err);
	for (size_t i = 0; i < n && off < errlen; i++) {
		snprintf(err + off, errlen - off, "%s%s",
			 i ? ", " : " (known gates: ", specs[i].name);
		off = strlen(err);
	}
	if (off < errlen)
		snprintf(err + off, errlen - off, "%s",
			 n ? ")" : " (no gates known)");
	return -EINVAL;
}

static void trim(const char **b, const char **e)
{
	while (*b < *e && (**b == ' ' || **b == '\t'))
		(*b)++;
	while (*e > *b && ((*e)[-1] == ' ' || (*e)[-1] == '\t'))
		(*e)--;
}

int features__parse(const struct feature_spec *specs, size_t n, const char *s,
		    struct feature_overrides *ov, char *err, size_t errlen)
{
	struct feature_overrides out = *ov;
	const char *p = s;

	if (n > FEATURES_MAX)
		return -E2BIG;
	while (p && *p) {
		const char *end = strchr(p, ','), *eq, *kb, *ke, *vb, *ve;
		int idx;
		bool v;

		if (!end)
			end = p + strlen(p);
		kb = p;
		ve = end;
		p = *end ? end + 1 : end;
		trim(&kb, &ve);
		if (kb == ve)
			continue; /* "A=true,,B=false" and a trailing comma */
		eq = memchr(kb, '=', ve - kb);
		if (!eq)
			return known_err(
				specs, n, err, errlen,
				"--feature-gates: \"%.*s\": missing =true or =false",
				(int)(ve - kb), kb);
		ke = eq;
		vb = eq + 1;
		trim(&kb, &ke);
		trim(&vb, &ve);
		idx = spec_lookup(specs, n, kb, ke - kb);
		if (idx < 0)
			return known_err(
				specs, n, err, errlen,
				"--feature-gates: unrecognized feature gate \"%.*s\"",
				(int)(ke - kb), kb);
		if (ve - vb == 4 && !strncasecmp(vb, "true", 4))
			v = true;
		else if (ve - vb == 5 && !strncasecmp(vb, "false", 5))
			v = false;
		else
			return known_err(
				specs, 0, err, errlen,
				"--feature-gates: %s=\"%.*s\": the value must be true or false",
				specs[idx].name, (int)(ve - vb), vb);
		out.set |= 1u << idx;
		out.val = v ? out.val | 1u << idx : out.val & ~(1u << idx);
	}
	*ov = out;
	return 0;
}

int features__parse_node(const struct feature_spec *specs, size_t n,
			 const struct doc_node *node,
			 struct feature_overrides *ov, char *err, size_t errlen)
{
	struct feature_overrides out = *ov;
	const char *file = node->file ? node->file : "config";

	if (node->kind == DOC_NULL)
		return 0; /* "featureGates:" with nothing under it */
	if (node->kind != DOC_MAP) {
		snprintf(
			err, errlen,
			"%s:%u: featureGates: expected a map of gate name to true/false",
			file, node->line);
		return -EINVAL;
	}
	for (size_t i = 0; i < node->map.n; i++) {
		const char *k = node->map.keys[i];
		const struct doc_node *v = node->map.vals[i];
		int idx = spec_lookup(specs, n, k, strlen(k));

		if (idx < 0)
			return known_err(
				specs, n, err, errlen,
				"%s:%u: featureGates: unrecognized feature gate \"%s\"",
				file, v->line, k);
		if (v->kind != DOC_BOOL) {
			snprintf(
				err, errlen,
				"%s:%u: featureGates.%s: expected true or false",
				file, v->line, k);
			return -EINVAL;
		}
		out.set |= 1u << idx;
		out.val = v->b ? out.val | 1u << idx : out.val & ~(1u << idx);
	}
	*ov = out;
	return 0;
}

int features__read_config(const struct feature_spec *specs, size_t n,
			  const char *path, struct feature_overrides *ov,
			  char *err, size_t errlen)
{
	struct feature_overrides out = {};
	struct doc_file *df = NULL;
	const struct doc_node *node;
	int ret;

	ret = doc__parse_file(path, &df, err, errlen);
	if (ret)
		return ret;
	node = df->ndocs ? doc__get(df->docs[0], "featureGates") : NULL;
	if (node)
		ret = features__parse_node(specs, n, node, &out, err, errlen);
	if (!ret)
		*ov = out;
	doc__free_file(df);
	return ret;
}

struct features *features__new(const struct feature_spec *specs, size_t n)
{
	struct features *f;

	if (n > FEATURES_MAX)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->specs = specs;
	f->n = n;
	for (size_t i = 0; i < n; i++)
		if (specs[i].def)
			f->on |= 1u << i;
	return f;
}

void features__free(struct features *f)
{
	free(f);
}

void features__set_warn(struct features *f, feature_warn_fn fn, void *ctx)
{
	f->warn = fn;
	f->warn_ctx = ctx;
}

int features__subscribe(struct features *f, int gate, feature_notify_fn fn,
			void *ctx)
{
	if (gate < -1 || gate >= (int)f->n || !fn)
		return -EINVAL;
	if (f->nsubs >= MAX_SUBS)
		return -ENOSPC;
	f->subs[f->nsubs].gate = gate;
	f->subs[f->nsubs].fn = fn;
	f->subs[f->nsubs].ctx = ctx;
	f->nsubs++;
	return 0;
}

static void warnf(struct features *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void warnf(struct features *f, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (f->warn)
		f->warn(f->warn_ctx, msg);
	else
		pr_warn("warning: %s\n", msg);
}

/* Tell subscribers; on a failure, tell those already told to go back. */
static int notify(struct features *f, int gate, bool on)
{
	size_t i;
	int err = 0;

	for (i = 0; i < f->nsubs; i++) {
		if (f->subs[i].gate != -1 && f->subs[i].gate != gate)
			continue;
		err = f->subs[i].fn(f->subs[i].ctx, gate, on);
		if (err)
			break;
	}
	if (!err)
		return 0;
	while (i-- > 0)
		if (f->subs[i].gate == -1 || f->subs[i].gate == gate)
			f->subs[i].fn(f->subs[i].ctx, gate, !on);
	return err;
}

int features__apply(struct features *f, const struct feature_overrides *cfg,
		    const struct feature_overrides *flags)
{
	const struct feature_overrides *layers[2] = { cfg, flags };
	int changed = 0, first_err = 0;

	for (size_t i = 0; i < f->n; i++) {
		const struct feature_spec *sp = &f->specs[i];
		uint32_t bit = 1u << i;
		bool want = sp->def, asked = false, was = f->on & bit;

		for (int l = 0; l < 2; l++) {
			if (layers[l] && (layers[l]->set & bit)) {
				want = layers[l]->val & bit;
				asked = true;
			}
		}
		if (asked && sp->lock_to_default && want != sp->def) {
			warnf(f,
			      "feature gate %s is %s and locked to %s: setting it to %s is ignored",
			      sp->name, features__stage_name(sp->stage),
			      sp->def ? "true" : "false",
			      want ? "true" : "false");
			want = sp->def;
		} else if (asked && (sp->stage == FEATURE_GA ||
				     sp->stage == FEATURE_DEPRECATED)) {
			/* Kubernetes' words for the same case */
			warnf(f,
			      "setting %s feature gate %s=%s; it will be removed in a future release",
			      sp->stage == FEATURE_GA ? "GA" : "deprecated",
			      sp->name, want ? "true" : "false");
		}
		if (want == was)
			continue;
		{
			int err = notify(f, (int)i, want);

			if (err) {
				warnf(f,
				      "feature gate %s stays %s: turning it %s failed: %s",
				      sp->name, was ? "on" : "off",
				      want ? "on" : "off", strerror(-err));
				if (!first_err)
					first_err = err;
				continue;
			}
		}
		f->on = want ? f->on | bit : f->on & ~bit;
		changed++;
	}
	return first_err ? first_err : changed;
}

size_t features__count(const struct features *f)
{
	return f->n;
}

const struct feature_spec *features__spec(const struct features *f, int gate)
{
	return gate >= 0 && (size_t)gate < f->n ? &f->specs[gate] : NULL;
}

bool features__enabled(const struct features *f, int gate)
{
	return gate >= 0 && (size_t)gate < f->n && (f->on & (1u << gate));
}

int features__lookup(const struct features *f, const char *name)
{
	return spec_lookup(f->specs, f->n, name, strlen(name));
}

void features__summary(const struct features *f, char *buf, size_t len)
{
	size_t off = 0;

	if (!len)
		return;
	buf[0] = 0;
	for (size_t i = 0; i < f->n && off < len; i++) {
		snprintf(buf + off, len - off, "%s%s=%s(%s)", i ? "," : "",
			 f->specs[i].name,
			 features__enabled(f, i) ? "true" : "false",
			 features__stage_name(f->specs[i].stage));
		off = strlen(buf);
	}
}

void features__dump(const struct features *f, FILE *out, bool json)
{
	if (json) {
		fputc('[', out);
		for (size_t i = 0; i < f->n; i++) {
			const struct feature_spec *sp = &f->specs[i];

			/* names and descriptions are ours: no escaping needed */
			fprintf(out,
				"%s{\"name\":\"%s\",\"stage\":\"%s\",\"default\":%s,"
				"\"enabled\":%s,\"lockToDefault\":%s,\"description\":\"%s\"}",
				i ? "," : "", sp->name,
				features__stage_name(sp->stage),
				sp->def ? "true" : "false",
				features__enabled(f, i) ? "true" : "false",
				sp->lock_to_default ? "true" : "false",
				sp->desc ? sp->desc : "");
		}
		fputs("]\n", out);
		return;
	}
	fprintf(out, "%-14s %-10s %-8s %-8s %s\n", "GATE", "STAGE", "DEFAULT",
		"ENABLED", "DESCRIPTION");
	for (size_t i = 0; i < f->n; i++) {
		const struct feature_spec *sp = &f->specs[i];

		fprintf(out, "%-14s %-10s %-8s %-8s %s%s\n", sp->name,
			features__stage_name(sp->stage),
			sp->def ? "true" : "false",
			features__enabled(f, i) ? "true" : "false",
			sp->lock_to_default ? "(locked) " : "",
			sp->desc ? sp->desc : "");
	}
}
