// SPDX-License-Identifier: Apache-2.0
/* `milometer translate`: see translate.h. */
#include <errno.h>
#include <getopt.h>
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

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: milometer translate (--manifests PATH... | --kubeconfig FILE)\n"
		"                           --target prometheus-rules|prometheus-relabel|otelcol|kube-state-metrics|prometheus-alerts\n"
		"                           [--format rules|prometheusrule] [--source-profile milometer|envoy]\n"
		"                           [--alerts-config FILE]\n"
		"                           [--le-format openmetrics|text] [--policy NAME]...\n"
		"                           [--name NAME] [--namespace NS] [-o FILE] [--strict] [--json]\n"
		"\n"
		"Compile the accepted MetricPolicies in the manifests into another\n"
		"stack's configuration. Targets:\n"
		"  prometheus-rules  recording rules computing each DataPlane policy's\n"
		"                    target series from the scraped source series\n"
		"  otelcol           an OpenTelemetry Collector configuration computing\n"
		"                    each DataPlane policy's target from the agent's\n"
		"                    OTLP sources (transform, filter processors)\n"
		"  kube-state-metrics  a CustomResourceState configuration computing\n"
		"                    each ResourceFields policy's series\n"
		"  prometheus-relabel a scrape job's metric_relabel_configs turning source\n"
		"                    series into target series, for the policies that\n"
		"                    only rename (same values, no series added together)\n"
		"  prometheus-alerts alerting rules over the target metrics: per route\n"
		"                    error rate and latency objectives (docs/alerts.md)\n"
		"\n"
		"  -m, --manifests PATH     directory or file to read (repeatable)\n"
		"  -k, --kubeconfig FILE    read the objects from that cluster instead\n"
		"  -t, --target TARGET      what to produce\n"
		"  -a, --alerts-config FILE prometheus-alerts: thresholds, windows, for:,\n"
		"                           severities, per-namespace/route overrides\n"
		"  -f, --format FORMAT      prometheus-*: a rule file (rules) or a\n"
		"                           monitoring.coreos.com/v1 PrometheusRule\n"
		"  -s, --source-profile P   how the sources look when scraped: milometer\n"
		"                           (the agent's /metrics, default) or envoy\n"
		"  -l, --le-format F        how the scrape prints `le`: openmetrics (\"1.0\",\n"
		"                           what Prometheus negotiates, default) or text (\"1\")\n"
		"  -p, --policy NAME        translate only this policy (repeatable)\n"
		"      --name NAME          PrometheusRule name, relabel job name\n"
		"                           (milometer-translated)\n"
		"      --namespace NS       PrometheusRule namespace\n"
		"      --otelcol-receiver HOST:PORT  OTLP/HTTP listen address (0.0.0.0:4318)\n"
		"      --otelcol-exporter URL  OTLP/HTTP destination (http://otlp-backend:4318)\n"
		"  -o, --output FILE        write there (atomically) instead of stdout\n"
		"      --strict             exit 3 when a policy is not translatable\n"
		"  -j, --json               the per-policy report as JSON (on stderr)\n"
		"  -h, --help               this text\n"
		"\n"
		"The report (stderr) has one line per policy: Translated, or\n"
		"NotTranslatable with the reason; such a policy is left out.\n"
		"Exit status: 0 done, 2 usage error or unreadable manifests,\n"
		"3 --strict and a policy not translatable.\n");
}

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
	struct tr_opts o = {
		.profile = profile__find("milometer"),
		.le_format = PROM_FMT_OPENMETRICS,
		.object_name = name,
		.object_namespace = ns,
		.otel_receiver = "0.0.0.0:4318",
		.otel_exporter = "http://otlp-backend:4318",
	};
	struct tr_report rep = { 0 };
	char err[512] = "";
	FILE *f;
	int ret;

	if (!translate__known_target(target))
		return -EINVAL;
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

int translate__run(int argc, char **argv, FILE *out, FILE *errf,
		   const struct translate_api *api)
{
	enum { O_NAME = 256, O_NS, O_STRICT, O_ORECV, O_OEXP };
	static const struct option opts[] = {
		{ "manifests", required_argument, NULL, 'm' },
		{ "kubeconfig", required_argument, NULL, 'k' },
		{ "target", required_argument, NULL, 't' },
		{ "alerts-config", required_argument, NULL, 'a' },
		{ "format", required_argument, NULL, 'f' },
		{ "source-profile", required_argument, NULL, 's' },
		{ "le-format", required_argument, NULL, 'l' },
		{ "policy", required_argument, NULL, 'p' },
		{ "name", required_argument, NULL, O_NAME },
		{ "namespace", required_argument, NULL, O_NS },
		{ "output", required_argument, NULL, 'o' },
		{ "strict", no_argument, NULL, O_STRICT },
		{ "otelcol-receiver", required_argument, NULL, O_ORECV },
		{ "otelcol-exporter", required_argument, NULL, O_OEXP },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char **paths = calloc(argc + 1, sizeof(*paths));
	const char **names = calloc(argc + 1, sizeof(*names));
	struct tr_opts o = {
		.profile = profile__find("milometer"),
		.le_format = PROM_FMT_OPENMETRICS,
		.object_name = "milometer-translated",
		.otel_receiver = "0.0.0.0:4318",
		.otel_exporter = "http://otlp-backend:4318",
	};
	struct manifest_source *src = NULL;
	struct tr_report rep = { 0 };
	struct contract *c = NULL;
	struct mstore *store = NULL;
	struct policy_engine *e = NULL;
	const char *target = NULL, *output = NULL, *kubeconfig = NULL;
	void *api_handle = NULL;
	size_t npaths = 0, nnames = 0;
	bool json = false, strict = false;
	char err[1024] = "", *buf = NULL;
	size_t len = 0;
	FILE *mem = NULL;
	int ret = 2, opt;

	if (!paths || !names)
		goto cleanup;
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "m:k:t:a:f:s:l:p:o:jh", opts,
				  NULL)) != -1) {
		switch (opt) {
		case 'm':
			paths[npaths++] = optarg;
			break;
		case 'k':
			kubeconfig = optarg;
			break;
		case 't':
			target = optarg;
			break;
		case 'a':
			o.alerts_config = optarg;
			break;
		case 'f':
			if (!strcmp(optarg, "prometheusrule")) {
				o.prometheusrule = true;
			} else if (strcmp(optarg, "rules")) {
				fprintf(errf,
					"milometer translate: --format %s: use rules or prometheusrule\n",
					optarg);
				goto cleanup;
			}
			break;
		case 's':
			o.profile = profile__find(optarg);
			if (!o.profile) {
				fprintf(errf,
					"milometer translate: --source-profile %s: use milometer or envoy\n",
					optarg);
				goto cleanup;
			}
			break;
		case 'l':
			if (!strcmp(optarg, "text")) {
				o.le_format = PROM_FMT_TEXT;
			} else if (strcmp(optarg, "openmetrics")) {
				fprintf(errf,
					"milometer translate: --le-format %s: use openmetrics or text\n",
					optarg);
				goto cleanup;
			}
			break;
		case 'p':
			names[nnames++] = optarg;
			break;
		case O_NAME:
			o.object_name = optarg;
			break;
		case O_NS:
			o.object_namespace = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case O_STRICT:
			strict = true;
			break;
		case O_ORECV:
			o.otel_receiver = optarg;
			break;
		case O_OEXP:
			o.otel_exporter = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(out);
			ret = 0;
			goto cleanup;
		default:
			fprintf(errf,
				"milometer translate: unknown option %s\n",
				argv[optind - 1]);
			usage(errf);
			goto cleanup;
		}
	}
	if (optind < argc) {
		fprintf(errf,
			"milometer translate: unexpected argument \"%s\"\n",
			argv[optind]);
		goto cleanup;
	}
	if (!npaths == !kubeconfig || !target) {
		fprintf(errf,
			"milometer translate: --manifests PATH or --kubeconfig FILE, and --target TARGET, are required\n");
		usage(errf);
		goto cleanup;
	}
	if (kubeconfig && !api) {
		fprintf(errf,
			"milometer translate: --kubeconfig is not available in this build\n");
		goto cleanup;
	}
	if (!strcmp(target, "prometheus-rules")) {
		o.target = TR_PROM_RULES;
	} else if (!strcmp(target, "kube-state-metrics")) {
		o.target = TR_KSM;
	} else if (!strcmp(target, "otelcol")) {
		o.target = TR_OTELCOL;
	} else if (!strcmp(target, "prometheus-relabel")) {
		o.target = TR_PROM_RELABEL;
	} else if (!strcmp(target, "prometheus-alerts")) {
		o.target = TR_PROM_ALERTS;
	} else {
		fprintf(errf,
			"milometer translate: --target %s: use prometheus-rules, prometheus-relabel, otelcol, kube-state-metrics or prometheus-alerts\n",
			target);
		goto cleanup;
	}
	if (o.prometheusrule && o.target != TR_PROM_RULES &&
	    o.target != TR_PROM_ALERTS) {
		fprintf(errf,
			"milometer translate: --format prometheusrule wraps prometheus-rules or prometheus-alerts only\n");
		goto cleanup;
	}
	if (o.alerts_config && o.target != TR_PROM_ALERTS) {
		fprintf(errf,
			"milometer translate: --alerts-config is read by --target prometheus-alerts only\n");
		goto cleanup;
	}
	src = kubeconfig ? api->open(kubeconfig, &api_handle, err, sizeof(err))
			 : manifest_source__open_paths(paths, npaths, err,
						       sizeof(err));
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
	ret = translate__render(c, e, &o, names, nnames, mem, &rep, err,
				sizeof(err));
	if (fclose(mem))
		ret = ret ? ret : -ENOMEM;
	mem = NULL;
	if (ret) {
		fprintf(errf, "milometer translate: %s\n", err);
		ret = 2;
		goto cleanup;
	}
	if (output) {
		if (write_output(output, buf, len, errf)) {
			ret = 2;
			goto cleanup;
		}
	} else {
		fwrite(buf, 1, len, out);
	}
	report_print(&rep, target, json, errf);
	ret = 0;
	for (size_t i = 0; i < rep.n; i++)
		if (!rep.rows[i].ok && strict)
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
	free(paths);
	free(names);
	return ret;
}

int translate__main(int argc, char **argv, const struct translate_api *api)
{
	return translate__run(argc, argv, stdout, stderr, api);
}
