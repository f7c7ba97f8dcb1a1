// SPDX-License-Identifier: Apache-2.0
/* MetricDefinition reader and validator: see crd_definition.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/contract/crd_definition.h"
#include "policy/source/doc.h"
#include "policy/source/manifest_source.h"

/* Spelled-out units and their UCUM codes; both spellings are accepted. */
static const struct {
	const char *word;
	const char *ucum;
} units[] = {
	{ "1", "1" },
	{ "seconds", "s" },
	{ "milliseconds", "ms" },
	{ "microseconds", "us" },
	{ "nanoseconds", "ns" },
	{ "minutes", "min" },
	{ "hours", "h" },
	{ "bytes", "By" },
	{ "kilobytes", "kBy" },
	{ "megabytes", "MBy" },
	{ "gigabytes", "GBy" },
	{ "kibibytes", "KiBy" },
	{ "mebibytes", "MiBy" },
	{ "gibibytes", "GiBy" },
	{ "bits", "bit" },
	{ "percent", "%" },
};

static const char *const time_units[] = { "s",      "ms",   "us",     "ns",
					  "min",    "h",    "second", "seconds",
					  "minute", "hour", NULL };

/* Suffixes that mean a label carries a unit. */
static const char *const unit_suffixes[] = {
	"seconds",   "second",       "secs",        "sec",       "ms",
	"millis",    "milliseconds", "us",          "micros",    "microseconds",
	"ns",        "nanos",        "nanoseconds", "minutes",   "hours",
	"bytes",     "byte",         "kb",          "mb",        "gb",
	"kib",       "mib",          "gib",         "kilobytes", "megabytes",
	"gigabytes", "bits",         "percent",     NULL
};

static bool unit_word(const char *u, size_t len)
{
	char buf[32];

	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, u, len);
	buf[len] = 0;
	/* a UCUM annotation alone is dimensionless: {request} */
	if (buf[0] == '{' && buf[len - 1] == '}' && len > 2) {
		for (size_t i = 1; i < len - 1; i++)
			if (!(islower((unsigned char)buf[i]) ||
			      isdigit((unsigned char)buf[i]) || buf[i] == '_' ||
			      buf[i] == '.' || buf[i] == '-'))
				return false;
		return true;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(buf, units[i].word) || !strcmp(buf, units[i].ucum))
			return true;
	return false;
}

bool crd_definition__valid_unit(const char *unit)
{
	const char *slash = strchr(unit, '/');

	if (!slash)
		return unit_word(unit, strlen(unit));
	if (!unit_word(unit, slash - unit))
		return false;
	for (const char *const *t = time_units; *t; t++)
		if (!strcmp(slash + 1, *t))
			return true;
	return false;
}

const char *crd_definition__ucum(const char *unit)
{
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(unit, units[i].word))
			return units[i].ucum;
	return unit;
}

bool crd_definition__label_has_unit(const char *key)
{
	const char *last = strrchr(key, '.');
	size_t len;

	last = last ? last + 1 : key;
	len = strlen(last);
	for (const char *const *s = unit_suffixes; *s; s++) {
		size_t sl = strlen(*s);

		if (len == sl && !strcmp(last, *s))
			return true;
		if (len > sl && !strcmp(last + len - sl, *s) &&
		    last[len - sl - 1] == '_')
			return true;
	}
	return false;
}

const char *crd_definition__instrument_name(enum minstrument i)
{
	switch (i) {
	case MI_COUNTER:
		return "Counter";
	case MI_UPDOWN:
		return "UpDownCounter";
	case MI_GAUGE:
		return "Gauge";
	default:
		return "Histogram";
	}
}

static bool valid_label_key(const char *k)
{
	bool seg_start = true;
	size_t len = strlen(k);

	if (!len || len > 128)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = k[i];

		if (seg_start) {
			if (!islower((unsigned char)c))
				return false;
			seg_start = false;
		} else if (c == '.') {
			seg_start = true;
		} else if (!(islower((unsigned char)c) ||
			     isdigit((unsigned char)c) || c == '_')) {
			return false;
		}
	}
	return !seg_start;
}

/* See the header for the rule; returns NULL or what is wrong. */
static const char *name_problem(const char *name, const char *group,
				const char *kind)
{
	size_t glen = strlen(group), len = strlen(name);
	const char *p = name, *dot;
	bool seg_start = true;

	if (len > 255)
		return "is longer than 255 characters";
	if (glen) {
		if (strncmp(name, group, glen) || name[glen] != '.')
			return "must start with spec.resource.group followed by a dot";
		p = name + glen + 1;
	}
	dot = strchr(p, '.');
	if (!dot)
		return "needs <singular>.<metric> after the group";
	if (!crd__singular_matches(p, dot - p, kind))
		return "segment after the group must be the singular resource name (lowercase kind)";
	p = dot + 1;
	if (!*p)
		return "needs a metric segment after the singular resource name";
	for (; *p; p++) {
		if (seg_start) {
			if (!islower((unsigned char)*p))
				return "metric segments must start with a lowercase letter";
			seg_start = false;
		} else if (*p == '.') {
			seg_start = true;
		} else if (!(islower((unsigned char)*p) ||
			     isdigit((unsigned char)*p) || *p == '_')) {
			return "metric segments may hold only [a-z0-9_] (lowercase, OTel style)";
		}
	}
	if (seg_start)
		return "must not end with a dot";
	return NULL;
}

static void def_free(struct metric_def *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nlabels; i++) {
		free(d->labels[i].key);
		free(d->labels[i].description);
	}
	free(d->labels);
	free(d->obj_name);
	free(d->file);
	free(d->created);
	free(d->res_group);
	free(d->res_kind);
	free(d->name);
	free(d->description);
	free(d->unit);
	free(d->stability);
	free(d);
}

struct metric_def *crd_definition__get(struct metric_def *d)
{
	if (d)
		__atomic_add_fetch(&d->refs, 1, __ATOMIC_RELAXED);
	return d;
}

void crd_definition__put(struct metric_def *d)
{
	if (d && __atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL) == 0)
		def_free(d);
}

static int parse_instrument(const struct doc_node *ins, struct metric_def *d,
			    struct crd_err *e)
{
	static const char *const fields[] = { "type", "unit",
					      "aggregationTemporality", NULL };
	static const struct {
		const char *name;
		enum minstrument i;
	} types[] = { { "counter", MI_COUNTER },
		      { "updowncounter", MI_UPDOWN },
		      { "gauge", MI_GAUGE },
		      { "histogram", MI_HISTOGRAM } };
	const char *path = "spec.metric.instrument", *type, *unit, *temp;
	size_t i;
	int err;

	err = crd__check_map(ins, path, fields, e);
	if (err)
		return err;
	type = crd__req_str(ins, "type", path, e);
	unit = type ? crd__req_str(ins, "unit", path, e) : NULL;
	if (!unit)
		return -EINVAL;
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcasecmp(type, types[i].name))
			break;
	if (i == sizeof(types) / sizeof(types[0]))
		return crd__fail(
			e, "UnknownInstrument", doc__get(ins, "type"),
			"spec.metric.instrument.type",
			"\"%s\" is not an instrument; use Counter, UpDownCounter, Gauge or Histogram",
			type);
	d->instrument = types[i].i;
	if (!crd_definition__valid_unit(unit))
		return crd__fail(
			e, "InvalidUnit", doc__get(ins, "unit"),
			"spec.metric.instrument.unit",
			"\"%s\" is not a supported unit; spell it out (seconds, bytes, 1 for dimensionless) or use UCUM (s, ms, By, {request}); see crd_definition.h",
			unit);
	d->unit = strdup(unit);
	err = crd__opt_str(ins, "aggregationTemporality", path, &temp, e);
	if (err)
		return err;
	d->temporality = MT_CUMULATIVE;
	if (temp) {
		d->temporality_set = true;
		if (!strcasecmp(temp, "cumulative"))
			d->temporality = MT_CUMULATIVE;
		else if (!strcasecmp(temp, "delta"))
			d->temporality = MT_DELTA;
		else
			return crd__fail(
				e, "InvalidField",
				doc__get(ins, "aggregationTemporality"),
				"spec.metric.instrument.aggregationTemporality",
				"\"%s\" is not cumulative or delta", temp);
	}
	return d->unit ? 0 : -ENOMEM;
}

static int parse_labels(const struct doc_node *ls, struct metric_def *d,
			struct crd_err *e)
{
	static const char *const fields[] = { "key", "description", "required",
					      NULL };
	char path[64];
	int err;

	if (!ls || ls->kind == DOC_NULL)
		return 0;
	if (ls->kind != DOC_LIST)
		return crd__fail(e, "InvalidField", ls, "spec.labels",
				 "expected a list, found %s",
				 doc__kind_name(ls->kind));
	d->labels = calloc(ls->list.n + 1, sizeof(*d->labels));
	if (!d->labels)
		return -ENOMEM;
	for (size_t i = 0; i < ls->list.n; i++) {
		const struct doc_node *l = ls->list.items[i];
		struct mdef_label *out = &d->labels[i];
		const char *key, *desc;
		bool req;

		snprintf(path, sizeof(path), "spec.labels[%zu]", i);
		err = crd__check_map(l, path, fields, e);
		if (err)
			return err;
		key = crd__req_str(l, "key", path, e);
		if (!key)
			return -EINVAL;
		err = crd__opt_str(l, "description", path, &desc, e);
		if (!err)
			err = crd__opt_bool(l, "required", path, false, &req,
					    e);
		if (err)
			return err;
		if (!valid_label_key(key))
			return crd__fail(
				e, "InvalidLabel", doc__get(l, "key"), path,
				"label key \"%s\" must be lowercase [a-z][a-z0-9_]* segments joined by dots, at most 128 characters",
				key);
		if (crd_definition__label_has_unit(key))
			return crd__fail(
				e, "InvalidLabel", doc__get(l, "key"), path,
				"label key \"%s\" encodes a unit; units belong to spec.metric.instrument.unit, rename the label",
				key);
		if (crd_definition__label(d, key))
			return crd__fail(e, "InvalidLabel", doc__get(l, "key"),
					 path, "label key \"%s\" appears twice",
					 key);
		out->key = strdup(key);
		out->description = crd__strdup(desc);
		out->required = req;
		d->nlabels++;
		if (!out->key || (desc && !out->description))
			return -ENOMEM;
	}
	return 0;
}

int crd_definition__parse(const struct mobject *o, struct metric_def **out,
			  struct crd_err *e)
{
	static const char *const spec_f[] = { "resource", "metric", "labels",
					      NULL };
	static const char *const res_f[] = { "group", "kind", "resource",
					     "version", NULL };
	static const char *const metric_f[] = { "name", "description",
						"instrument", "stability",
						NULL };
	const struct doc_node *spec, *res, *metric;
	const char *group, *kind, *resname, *name, *desc, *stab, *why;
	struct metric_def *d;
	int err;

	*out = NULL;
	err = crd__check_object(o, e);
	if (err)
		return err;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->refs = 1;
	d->obj_name = strdup(o->name);
	d->file = strdup(o->file);
	d->line = o->line;
	d->created =
		crd__strdup(doc__str(o->root, "metadata.creationTimestamp"));

	spec = doc__get(o->root, "spec");
	err = crd__check_map(spec, "spec", spec_f, e);
	if (err)
		goto cleanup;
	res = doc__get(spec, "resource");
	err = crd__check_map(res, "spec.resource", res_f, e);
	if (err)
		goto cleanup;
	err = crd__opt_str(res, "group", "spec.resource", &group, e);
	if (!err)
		err = crd__opt_str(res, "kind", "spec.resource", &kind, e);
	if (!err)
		err = crd__opt_str(res, "resource", "spec.resource", &resname,
				   e);
	if (err)
		goto cleanup;
	if (!kind == !resname) {
		err = crd__fail(e, "InvalidField", res, "spec.resource",
				"set exactly one of kind or resource");
		goto cleanup;
	}
	d->res_group = strdup(group ? group : "");
	d->res_kind = strdup(kind ? kind : resname);

	metric = doc__get(spec, "metric");
	err = crd__check_map(metric, "spec.metric", metric_f, e);
	if (err)
		goto cleanup;
	name = crd__req_str(metric, "name", "spec.metric", e);
	if (!name) {
		err = -EINVAL;
		goto cleanup;
	}
	err = crd__opt_str(metric, "description", "spec.metric", &desc, e);
	if (!err)
		err = crd__opt_str(metric, "stability", "spec.metric", &stab,
				   e);
	if (err)
		goto cleanup;
	if (stab && strcmp(stab, "Alpha") && strcmp(stab, "Beta") &&
	    strcmp(stab, "Stable") && strcmp(stab, "Deprecated")) {
		err = crd__fail(
			e, "InvalidField", doc__get(metric, "stability"),
			"spec.metric.stability",
			"\"%s\" is not Alpha, Beta, Stable or Deprecated",
			stab);
		goto cleanup;
	}
	why = name_problem(name, d->res_group, d->res_kind);
	if (why) {
		char sing[64];
		size_t i;

		for (i = 0; d->res_kind[i] && i < sizeof(sing) - 1; i++)
			sing[i] = tolower((unsigned char)d->res_kind[i]);
		sing[i] = 0;
		err = crd__fail(
			e, "InvalidName", doc__get(metric, "name"),
			"spec.metric.name",
			"\"%s\" %s (expected <group>.<singular>.<metric>, e.g. %s%s%s.request.count)",
			name, why, d->res_group, d->res_group[0] ? "." : "",
			sing);
		goto cleanup;
	}
	d->name = strdup(name);
	d->description = strdup(desc ? desc : "");
	d->stability = crd__strdup(stab);
	err = parse_instrument(doc__get(metric, "instrument"), d, e);
	if (err)
		goto cleanup;
	err = parse_labels(doc__get(spec, "labels"), d, e);
	if (err)
		goto cleanup;
	if (!d->obj_name || !d->file || !d->res_group || !d->res_kind ||
	    !d->name || !d->description) {
		err = -ENOMEM;
		goto cleanup;
	}
	*out = d;
	return 0;
cleanup:
	if (err == -ENOMEM)
		crd__fail(e, "Internal", NULL, NULL, "out of memory");
	def_free(d);
	return err;
}

const struct mdef_label *crd_definition__label(const struct metric_def *d,
					       const char *key)
{
	for (size_t i = 0; i < d->nlabels; i++)
		if (!strcmp(d->labels[i].key, key))
			return &d->labels[i];
	return NULL;
}

bool crd_definition__breaks(const struct metric_def *prev,
			    const struct metric_def *next, char *msg,
			    size_t len)
{
	if (strcmp(prev->name, next->name)) {
		snprintf(msg, len,
			 "spec.metric.name changed from \"%s\" to \"%s\"",
			 prev->name, next->name);
		return true;
	}
	if (strcmp(prev->unit, next->unit)) {
		snprintf(
			msg, len,
			"spec.metric.instrument.unit changed from \"%s\" to \"%s\"",
			prev->unit, next->unit);
		return true;
	}
	if (prev->instrument != next->instrument) {
		snprintf(msg, len,
			 "spec.metric.instrument.type changed from %s to %s",
			 crd_definition__instrument_name(prev->instrument),
			 crd_definition__instrument_name(next->instrument));
		return true;
	}
	if (prev->temporality != next->temporality) {
		snprintf(
			msg, len,
			"spec.metric.instrument.aggregationTemporality changed");
		return true;
	}
	for (size_t i = 0; i < prev->nlabels; i++) {
		if (!crd_definition__label(next, prev->labels[i].key)) {
			snprintf(msg, len, "label \"%s\" was removed",
				 prev->labels[i].key);
			return true;
		}
	}
	return false;
}
