// SPDX-License-Identifier: Apache-2.0
/* OTel -> Prometheus names: see prom_names.h. */
#include <errno.h>
#include <string.h>

#include "exporter/prom_names.h"
#include "policy/util/utf8.h"

struct unit_word {
	const char *ucum;
	const char *word;
};

/* The Collector's translator tables (pkg/translator/prometheus). */
static const struct unit_word units[] = {
	{ "d", "days" },          { "h", "hours" },
	{ "min", "minutes" },     { "s", "seconds" },
	{ "ms", "milliseconds" }, { "us", "microseconds" },
	{ "ns", "nanoseconds" },  { "By", "bytes" },
	{ "KiBy", "kibibytes" },  { "MiBy", "mebibytes" },
	{ "GiBy", "gibibytes" },  { "TiBy", "tibibytes" },
	{ "KBy", "kilobytes" },   { "MBy", "megabytes" },
	{ "GBy", "gigabytes" },   { "TBy", "terabytes" },
	{ "m", "meters" },        { "V", "volts" },
	{ "A", "amperes" },       { "J", "joules" },
	{ "W", "watts" },         { "g", "grams" },
	{ "Cel", "celsius" },     { "Hz", "hertz" },
	{ "%", "percent" },
};

static const struct unit_word per_units[] = {
	{ "s", "second" }, { "m", "minute" }, { "h", "hour" }, { "d", "day" },
	{ "w", "week" },   { "mo", "month" }, { "y", "year" },
};

static const char *lookup(const struct unit_word *t, size_t n, const char *u,
			  size_t len)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].word && strlen(t[i].ucum) == len &&
		    !strncmp(t[i].ucum, u, len))
			return t[i].word;
	return NULL;
}

struct out {
	char *p;
	size_t len, cap;
	bool overflow;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 >= o->cap) {
		o->overflow = true;
		return;
	}
	o->p[o->len++] = c;
	o->p[o->len] = 0;
}

static bool name_char(char c, bool colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || (colon && c == ':');
}

/* Sanitize n bytes of s onto o: invalid -> '_', no "__" runs. */
static void put_sanitized(struct out *o, const char *s, size_t n, bool colon)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char c = name_char(s[i], colon) ? s[i] : '_';

		if (c == '_' && o->len && o->p[o->len - 1] == '_')
			continue;
		put(o, c);
	}
}

static int finish(struct out *o)
{
	return o->overflow ? -ENOSPC : (int)o->len;
}

int prom_names__unit(const char *unit, enum minstrument inst, char *buf,
		     size_t len)
{
	struct out o = { buf, 0, len };
	char clean[128];
	const char *slash, *w;
	size_t n = 0, i;
	int depth = 0;

	if (!len)
		return -ENOSPC;
	buf[0] = 0;
	if (!unit)
		return 0;
	/* {annotations} carry no unit */
	for (i = 0; unit[i] && n + 1 < sizeof(clean); i++) {
		if (unit[i] == '{')
			depth++;
		else if (unit[i] == '}' && depth)
			depth--;
		else if (!depth)
			clean[n++] = unit[i];
	}
	clean[n] = 0;
	if (!strcmp(clean, "1")) {
		if (inst == MI_GAUGE)
			put_sanitized(&o, "ratio", 5, false);
		return finish(&o);
	}
	slash = strchr(clean, '/');
	n = slash ? (size_t)(slash - clean) : strlen(clean);
	if (n) {
		w = lookup(units, sizeof(units) / sizeof(units[0]), clean, n);
		if (w)
			put_sanitized(&o, w, strlen(w), false);
		else
			put_sanitized(&o, clean, n, false);
	}
	if (slash && slash[1]) {
		w = lookup(per_units, sizeof(per_units) / sizeof(per_units[0]),
			   slash + 1, strlen(slash + 1));
		if (o.len)
			put(&o, '_');
		put_sanitized(&o, "per_", 4, false);
		if (w)
			put_sanitized(&o, w, strlen(w), false);
		else
			put_sanitized(&o, slash + 1, strlen(slash + 1), false);
	}
	/* a unit of only invalid characters says nothing */
	if (o.len == 1 && buf[0] == '_')
		o.len = buf[0] = 0;
	return finish(&o);
}

/*
 * Unit words that are a scaled form of a Prometheus base unit (seconds,
 * bytes). Prometheus names carry base units only (promtool's linter: "use
 * base unit seconds instead of milliseconds"), so a metric in such a unit
 * gets no unit suffix at all: the name stays what the source calls it.
 * That is Envoy's own exposition of its *_rq_time histograms (milliseconds,
 * no suffix), so Envoy dashboards and queries work unchanged; the values
 * are never rescaled.
 */
static const char *const scaled_units[] = {
	"days",        "hours",     "minutes",   "milliseconds", "microseconds",
	"nanoseconds", "kibibytes", "mebibytes", "gibibytes",    "tibibytes",
	"kilobytes",   "megabytes", "gigabytes", "terabytes",
};

static bool has_part(const char *name, const char *word);

bool prom_names__unit_is_scaled(const char *word)
{
	size_t i;

	for (i = 0; i < sizeof(scaled_units) / sizeof(scaled_units[0]); i++)
		if (has_part(word, scaled_units[i]))
			return true;
	return false;
}

/* Does name contain word as a whole '_'-separated part sequence? */
static bool has_part(const char *name, const char *word)
{
	size_t wl = strlen(word);
	const char *p = name;

	if (!wl)
		return true;
	while ((p = strstr(p, word))) {
		bool start = p == name || p[-1] == '_';
		bool end = p[wl] == 0 || p[wl] == '_';

		if (start && end)
			return true;
		p++;
	}
	return false;
}

int prom_names__metric(const struct mmetric_desc *d, char *buf, size_t len)
{
	struct out o = { buf, 0, len };
	char unit[128];
	bool counter = d->instrument == MI_COUNTER;
	int ul;

	if (!len)
		return -ENOSPC;
	buf[0] = 0;
	if (d->name[0] >= '0' && d->name[0] <= '9')
		put(&o, '_');
	put_sanitized(&o, d->name, strlen(d->name), true);
	/* "_total" goes last, after the unit */
	if (counter && o.len >= 6 && !strcmp(buf + o.len - 6, "_total"))
		buf[o.len -= 6] = 0;
	ul = prom_names__unit(d->unit, d->instrument, unit, sizeof(unit));
	if (ul > 0 && !has_part(buf, unit) &&
	    !prom_names__unit_is_scaled(unit)) {
		put(&o, '_');
		put_sanitized(&o, unit, (size_t)ul, false);
	}
	if (counter)
		put_sanitized(&o, "_total", 6, false);
	return finish(&o);
}

int prom_names__label(const char *key, char *buf, size_t len)
{
	struct out o = { buf, 0, len };

	if (!len)
		return -ENOSPC;
	buf[0] = 0;
	if (key[0] >= '0' && key[0] <= '9')
		put(&o, '_');
	put_sanitized(&o, key, strlen(key), false);
	return finish(&o);
}

static const char *prom_escape(unsigned char c, char buf[8], void *quotes)
{
	(void)buf;
	if (c == '\\')
		return "\\\\";
	if (c == '\n')
		return "\\n";
	if (c == '"' && *(bool *)quotes)
		return "\\\"";
	return NULL;
}

void prom_names__write_escaped(FILE *f, const char *s, bool quotes)
{
	utf8__write_escaped(f, s, prom_escape, &quotes);
}

const char *prom_names__type(enum minstrument inst)
{
	switch (inst) {
	case MI_COUNTER:
		return "counter";
	case MI_HISTOGRAM:
		return "histogram";
	default:
		return "gauge";
	}
}
