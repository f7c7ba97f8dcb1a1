// SPDX-License-Identifier: Apache-2.0
/*
 * `milometer translate`: the flags, then policy/translate does the work.
 * With --kubeconfig FILE the contract and subject objects are listed once
 * (the same watches as the controller), then translated as --manifests
 * would be.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_MODULE "translate"
#include "agent/cmd/cmd.h"
#include "agent/k8s/api_source.h"
#include "policy/source/manifest_source.h"
#include "policy/translate/profile.h"
#include "policy/translate/translate.h"
#include "policy/util/log.h"

#define SYNC_MS 20000

struct handle {
	struct k8s_api *api;
	struct manifest_source *src;
};

static struct manifest_source *api_open(const char *kubeconfig, void **out,
					char *err, size_t errlen)
{
	struct k8s_api_opts o = { .kubeconfig = kubeconfig };
	struct handle *h = calloc(1, sizeof(*h));

	if (!h || k8s_api__start(&o, &h->api, err, errlen)) {
		free(h);
		return NULL;
	}
	if (!k8s_api__wait_synced(h->api, SYNC_MS))
		pr_warn("not every resource listed within %d s; translating what arrived\n",
			SYNC_MS / 1000);
	h->src = k8s_api__manifest_source(h->api);
	if (!h->src) {
		k8s_api__free(h->api);
		free(h);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	*out = h;
	return h->src;
}

static void api_close(void *p)
{
	struct handle *h = p;

	manifest_source__free(h->src);
	k8s_api__free(h->api);
	free(h);
}

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

/* The flags into c; 0, 1 for --help (done), 2 for a usage error. */
static int parse(int argc, char **argv, struct translate_cmd *c,
		 const char **paths, const char **names)
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
	int opt, kind;

	c->paths = paths;
	c->policies = names;
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "m:k:t:a:f:s:l:p:o:jh", opts,
				  NULL)) != -1) {
		switch (opt) {
		case 'm':
			paths[c->npaths++] = optarg;
			break;
		case 'k':
			c->kubeconfig = optarg;
			break;
		case 't':
			c->target_name = optarg;
			break;
		case 'a':
			c->alerts_config = optarg;
			break;
		case 'f':
			if (!strcmp(optarg, "prometheusrule")) {
				c->prometheusrule = true;
			} else if (strcmp(optarg, "rules")) {
				pr_err("--format %s: use rules or prometheusrule\n",
				       optarg);
				return 2;
			}
			break;
		case 's':
			c->profile = profile__find(optarg);
			if (!c->profile) {
				pr_err("--source-profile %s: use milometer or envoy\n",
				       optarg);
				return 2;
			}
			break;
		case 'l':
			if (!strcmp(optarg, "text")) {
				c->le_text = true;
			} else if (strcmp(optarg, "openmetrics")) {
				pr_err("--le-format %s: use openmetrics or text\n",
				       optarg);
				return 2;
			}
			break;
		case 'p':
			names[c->npolicies++] = optarg;
			break;
		case O_NAME:
			c->object_name = optarg;
			break;
		case O_NS:
			c->object_namespace = optarg;
			break;
		case 'o':
			c->output = optarg;
			break;
		case O_STRICT:
			c->strict = true;
			break;
		case O_ORECV:
			c->otel_receiver = optarg;
			break;
		case O_OEXP:
			c->otel_exporter = optarg;
			break;
		case 'j':
			c->json = true;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			pr_err("unknown option %s\n", argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		pr_err("unexpected argument \"%s\"\n", argv[optind]);
		return 2;
	}
	if (!c->npaths == !c->kubeconfig || !c->target_name) {
		pr_err("--manifests PATH or --kubeconfig FILE, and --target TARGET, are required\n");
		usage(stderr);
		return 2;
	}
	kind = translate__target_kind(c->target_name);
	if (kind < 0) {
		pr_err("--target %s: use prometheus-rules, prometheus-relabel, otelcol, kube-state-metrics or prometheus-alerts\n",
		       c->target_name);
		return 2;
	}
	c->target = kind;
	if (c->prometheusrule && c->target != TR_PROM_RULES &&
	    c->target != TR_PROM_ALERTS) {
		pr_err("--format prometheusrule wraps prometheus-rules or prometheus-alerts only\n");
		return 2;
	}
	if (c->alerts_config && c->target != TR_PROM_ALERTS) {
		pr_err("--alerts-config is read by --target prometheus-alerts only\n");
		return 2;
	}
	return 0;
}

int translate_api__main(int argc, char **argv)
{
	static const struct translate_api api = { api_open, api_close };
	const char **paths = calloc(argc + 1, sizeof(*paths));
	const char **names = calloc(argc + 1, sizeof(*names));
	struct translate_cmd c = { 0 };
	int ret = 2;

	if (!paths || !names) {
		pr_err("out of memory\n");
		goto out;
	}
	ret = parse(argc, argv, &c, paths, names);
	if (ret == 1)
		ret = 0;
	else if (!ret)
		ret = translate__run(&c, stdout, stderr, &api);
out:
	free(paths);
	free(names);
	return ret;
}
