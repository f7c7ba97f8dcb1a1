// SPDX-License-Identifier: Apache-2.0
/* `milometer translate`: see translate.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "policy/util/json_out.h"
#include "policy/model/metric_store.h"
#include "policy/contract/contract.h"
#include "policy/contract/policy_engine.h"
#include "policy/source/manifest_source.h"
#include "policy/translate/translate_impl.h"

void report__add(struct tr_report *r, const char *policy, bool ok,
		 const char *fmt, ...)
{
	struct tr_report_row *rows =
		realloc(r->rows, (r->n + 1) * sizeof(*rows));
	va_list ap;
	char msg[1024];

	if (!rows)
		return;
	r->rows = rows;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rows[r->n].policy = strdup(policy);
	rows[r->n].msg = strdup(msg);
	rows[r->n].ok = ok;
	rows[r->n].na = false;
	if (rows[r->n].policy && rows[r->n].msg)
		r->n++;
}

void report__na(struct tr_report *r, const char *policy, const char *msg)
{
	report__add(r, policy, true, "%s", msg);
	if (r->n && !strcmp(r->rows[r->n - 1].policy, policy))
		r->rows[r->n - 1].na = true;
}

void report__free(struct tr_report *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->rows[i].policy);
		free(r->rows[i].msg);
	}
	free(r->rows);
	r->rows = NULL;
	r->n = 0;
}

static void report_print(const struct tr_report *r, const char *target,
			 bool json, FILE *f)
{
	if (json) {
		fputs("[", f);
		for (size_t i = 0; i < r->n; i++) {
			fputs(i ? ",\n {" : "{", f);
			fputs("\"policy\":", f);
			json_out__str(f, r->rows[i].policy);
			fputs(",\"target\":", f);
			json_out__str(f, target);
			fprintf(f, ",\"translated\":%s,\"reason\":",
				r->rows[i].ok && !r->rows[i].na ? "true"
								: "false");
			json_out__str(f, r->rows[i].na   ? "NotApplicable"
					 : r->rows[i].ok ? "Translated"
							 : "NotTranslatable");
			fputs(",\"message\":", f);
			json_out__str(f, r->rows[i].msg);
			fputs("}", f);
		}
		fputs("]\n", f);
		return;
	}
	for (size_t i = 0; i < r->n; i++)
		fprintf(f, "%s: %s: %s%s\n", r->rows[i].policy, target,
			r->rows[i].na   ? "NotApplicable: "
			: r->rows[i].ok ? "Translated: "
					: "NotTranslatable: ",
			r->rows[i].msg);
}

int translate__render(struct contract *c, struct policy_engine *e,
		      const struct tr_opts *o, const char *const *names,
		      size_t nnames, FILE *out, struct tr_report *rep,
		      char *err, size_t errlen)
{
	struct tr_plan *plans = NULL;
	size_t n = 0;
	int ret;

	ret = plan__build(c, e, names, nnames, &plans, &n, err, errlen);
	if (ret)
		return ret;
	switch (o->target) {
	case TR_PROM_RULES:
		ret = tr_prom__rules(out, plans, n, o, rep);
		break;
	case TR_KSM:
		ret = tr_ksm__config(out, plans, n, o, rep);
		break;
	case TR_OTELCOL:
		ret = tr_otel__config(out, plans, n, o, rep);
		break;
	case TR_PROM_RELABEL:
		ret = tr_relabel__config(out, plans, n, o, rep);
		break;
	case TR_PROM_ALERTS:
		ret = tr_alerts__rules(out, c, plans, n, o, rep, err, errlen);
		break;
	}
	if (ret && !err[0])
		snprintf(err, errlen, "%s", strerror(-ret));
	plan__free(plans, n);
	return ret;
}

/* What a translation assumes unless told otherwise. */
static struct tr_opts opts_default(void)
{
	return (struct tr_opts){
		.profile = profile__find("milometer"),
		.le_format = PROM_FMT_OPENMETRICS,
		.object_name = "milometer-translated",
		.otel_receiver = "0.0.0.0:4318",
		.otel_exporter = "http://otlp-backend:4318",
	};
}

bool translate__known_target(const char *t)
{
	return !strcmp(t, "prometheus-rules") || !strcmp(t, "prometheusrule") ||
	       !strcmp(t, "otelcol") || !strcmp(t, "kube-state-metrics");
}

int translate__target(struct contract *c, struct policy_engine *e,
		      const char *target, const char *name, const char *ns,
		      char **buf, size_t *len, translate_report_fn fn,
		      void *ctx)
{
	struct tr_opts o = opts_default();
	struct tr_report rep = { 0 };
	char err[512] = "";
	FILE *f;
	int ret;

	if (!translate__known_target(target))
		return -EINVAL;
	o.object_name = name;
	o.object_namespace = ns;
	o.prometheusrule = !strcmp(target, "prometheusrule");
	o.target = !strcmp(target, "otelcol")              ? TR_OTELCOL
		   : !strcmp(target, "kube-state-metrics") ? TR_KSM
							   : TR_PROM_RULES;
	*buf = NULL;
	*len = 0;
	f = open_memstream(buf, len);
	if (!f)
		return -ENOMEM;
	ret = translate__render(c, e, &o, NULL, 0, f, &rep, err, sizeof(err));
	if (fclose(f) && !ret)
		ret = -ENOMEM;
	for (size_t i = 0; !ret && fn && i < rep.n; i++)
		if (!rep.rows[i].na)
			fn(ctx, rep.rows[i].policy, rep.rows[i].ok,
			   rep.rows[i].msg);
	report__free(&rep);
	if (ret) {
		free(*buf);
		*buf = NULL;
	}
	return ret;
}

/*
 * A regular file is replaced whole (written beside it, then renamed), so a
 * reader such as a config reloader never sees half of it. Anything else
 * (/dev/null, /dev/stdout, a FIFO) is written in place: renaming over it
 * would replace the device node itself with a regular file.
 */
static int write_output(const char *path, const char *buf, size_t len,
			FILE *errf)
{
	char tmp[4096];
	struct stat st;
	bool in_place;
	FILE *f;

	in_place = !stat(path, &st) && !S_ISREG(st.st_mode);
	if (in_place)
		snprintf(tmp, sizeof(tmp), "%s", path);
	else
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		fprintf(errf, "milometer translate: cannot write %s: %s\n", tmp,
			strerror(errno));
		return -errno;
	}
	if (!in_place && rename(tmp, path)) {
		fprintf(errf,
			"milometer translate: cannot rename %s to %s: %s\n",
			tmp, path, strerror(errno));
		return -errno;
	}
	return 0;
}

int translate__target_kind(const char *name)
{
	static const char *const names[] = {
		[TR_PROM_RULES] = "prometheus-rules",
		[TR_KSM] = "kube-state-metrics",
		[TR_OTELCOL] = "otelcol",
		[TR_PROM_ALERTS] = "prometheus-alerts",
		[TR_PROM_RELABEL] = "prometheus-relabel",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return (int)i;
	return -EINVAL;
}

int translate__run(const struct translate_cmd *cmd, FILE *out, FILE *errf,
		   const struct translate_api *api)
{
	struct tr_opts o = opts_default();
	struct manifest_source *src = NULL;
	struct tr_report rep = { 0 };
	struct contract *c = NULL;
	struct mstore *store = NULL;
	struct policy_engine *e = NULL;
	void *api_handle = NULL;
	char err[1024] = "", *buf = NULL;
	size_t len = 0;
	FILE *mem = NULL;
	int ret = 2;

	o.target = cmd->target;
	if (cmd->profile)
		o.profile = cmd->profile;
	if (cmd->le_text)
		o.le_format = PROM_FMT_TEXT;
	o.prometheusrule = cmd->prometheusrule;
	o.alerts_config = cmd->alerts_config;
	if (cmd->object_name)
		o.object_name = cmd->object_name;
	o.object_namespace = cmd->object_namespace;
	if (cmd->otel_receiver)
		o.otel_receiver = cmd->otel_receiver;
	if (cmd->otel_exporter)
		o.otel_exporter = cmd->otel_exporter;
	if (cmd->kubeconfig && !api) {
		fprintf(errf,
			"milometer translate: --kubeconfig is not available in this build\n");
		goto cleanup;
	}
	src = cmd->kubeconfig
		      ? api->open(cmd->kubeconfig, &api_handle, err,
				  sizeof(err))
		      : manifest_source__open_paths(cmd->paths, cmd->npaths,
						    err, sizeof(err));
	if (!src) {
		fprintf(errf, "milometer translate: %s\n", err);
		goto cleanup;
	}
	c = contract__new();
	store = mstore__new(NULL);
	e = c && store ? policy_engine__new(store, c) : NULL;
	if (!e || contract__load(c, src) || policy_engine__sync(e, src) < 0) {
		fprintf(errf, "milometer translate: out of memory\n");
		goto cleanup;
	}
	if (contract__rejected(c))
		fprintf(errf,
			"milometer translate: %zu object(s) rejected; `milometer check` says why (they are not translated)\n",
			contract__rejected(c));
	mem = open_memstream(&buf, &len);
	if (!mem)
		goto cleanup;
	err[0] = 0;
	ret = translate__render(c, e, &o, cmd->policies, cmd->npolicies, mem,
				&rep, err, sizeof(err));
	if (fclose(mem))
		ret = ret ? ret : -ENOMEM;
	mem = NULL;
	if (ret) {
		fprintf(errf, "milometer translate: %s\n", err);
		ret = 2;
		goto cleanup;
	}
	if (cmd->output) {
		if (write_output(cmd->output, buf, len, errf)) {
			ret = 2;
			goto cleanup;
		}
	} else {
		fwrite(buf, 1, len, out);
	}
	report_print(&rep, cmd->target_name, cmd->json, errf);
	ret = 0;
	for (size_t i = 0; i < rep.n; i++)
		if (!rep.rows[i].ok && cmd->strict)
			ret = 3;
cleanup:
	if (mem)
		fclose(mem);
	free(buf);
	report__free(&rep);
	policy_engine__free(e);
	mstore__free(store);
	contract__free(c);
	if (api_handle)
		api->close(api_handle); /* owns src */
	else
		manifest_source__free(src);
	return ret;
}
