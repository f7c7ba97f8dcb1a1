// SPDX-License-Identifier: Apache-2.0
/* Metric reference tables: see metric_doc.h. */
#include <errno.h>
#include <string.h>

#include "exporter/metric_doc.h"
#include "exporter/prom_names.h"

struct mmetric_desc metric_doc__desc(const struct metric_doc *d)
{
	return (struct mmetric_desc){
		.name = d->name,
		.description = d->help,
		.unit = d->unit,
		.instrument = d->instrument,
		.temporality = MT_CUMULATIVE,
		.is_int = d->is_int,
	};
}

/* A table cell: '|' would end it and a newline would end the row. */
static void cell(FILE *out, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '|')
			fputs("\\|", out);
		else if (*s == '\n')
			fputc(' ', out);
		else
			fputc(*s, out);
	}
}

static int write_labels(FILE *out, const char *labels)
{
	char key[128], prom[128];
	const char *p = labels;

	if (!labels || !labels[0]) {
		fputs("—", out);
		return 0;
	}
	while (*p) {
		size_t n = strcspn(p, ",");

		if (n >= sizeof(key))
			return -ENAMETOOLONG;
		memcpy(key, p, n);
		key[n] = 0;
		if (prom_names__label(key, prom, sizeof(prom)) < 0)
			return -ENAMETOOLONG;
		fprintf(out, "%s`%s`", p == labels ? "" : ", ", prom);
		p += n + (p[n] == ',');
	}
	return 0;
}

int metric_doc__write_section(FILE *out, const char *title, const char *intro,
			      const struct metric_doc *docs, size_t n)
{
	fprintf(out, "## %s\n\n", title);
	if (intro)
		fprintf(out, "%s\n\n", intro);
	fputs("| Name | Type | Unit | Labels | Meaning |\n"
	      "|---|---|---|---|---|\n",
	      out);
	for (size_t i = 0; i < n; i++) {
		const struct metric_doc *d = &docs[i];
		struct mmetric_desc desc = metric_doc__desc(d);
		char name[256];
		int err;

		if (prom_names__metric(&desc, name, sizeof(name)) < 0)
			return -ENAMETOOLONG;
		fprintf(out, "| `%s` | %s | %s | ", name,
			prom_names__type(d->instrument),
			d->unit && d->unit[0] ? d->unit : "—");
		err = write_labels(out, d->labels);
		if (err)
			return err;
		fputs(" | ", out);
		cell(out, d->help);
		if (d->note) {
			fputc(' ', out);
			cell(out, d->note);
		}
		if (d->when) {
			fputs(" Exposed ", out);
			cell(out, d->when);
			fputc('.', out);
		}
		fputs(" |\n", out);
	}
	fputc('\n', out);
	return ferror(out) ? -EIO : 0;
}
