// SPDX-License-Identifier: Apache-2.0
/* `milometer controller`: its flags; the controller is agent/controller/. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_MODULE "controller"
#include "agent/cmd/cmd.h"
#include "agent/controller/controller.h"
#include "policy/util/log.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: milometer controller [--kubeconfig FILE] [--leader-elect-namespace NS]\n"
		"                            [--identity ID] [--lease-name NAME]\n"
		"                            [--prometheus-listen ADDR] [--prometheus-url URL]\n"
		"                            [--translate TARGET=NAMESPACE/NAME]...\n"
		"                            [--metrics-auth MODE]\n"
		"\n"
		"Validate MetricDefinitions and MetricPolicies and write their status\n"
		"conditions (Accepted, ResolvedRefs) by server-side apply on /status, and\n"
		"produce the ResourceFields (control-plane) series once for the cluster.\n"
		"Run 1-2 replicas: one leader, elected with a coordination.k8s.io Lease;\n"
		"only the leader writes status and sets series.\n"
		"\n"
		"  --kubeconfig FILE             default $KUBECONFIG, then in-cluster\n"
		"  --prometheus-listen ADDR      /metrics with the ResourceFields series\n"
		"                                (default 127.0.0.1:9465; \"\" disables),\n"
		"                                and /ui, the per-route view\n"
		"  --prometheus-url URL          where /ui reads the agents' series from\n"
		"                                (a Prometheus query API; without it /ui\n"
		"                                shows only this process' own series)\n"
		"  --metrics-auth MODE           none (default) or kubernetes: a bearer\n"
		"                                token checked by TokenReview; get on\n"
		"                                /metrics reads all, others the series of\n"
		"                                objects they may get (docs/tenancy.md)\n"
		"  --metrics-auth-ttl SECONDS    cache decisions this long (default 30)\n"
		"  --metrics-auth-max-entries N  decisions cached at most (default 10000)\n"
		"  --metrics-auth-extra K=V      add to every SubjectAccessReview's extra\n"
		"                                (repeatable; {namespace}: the object's)\n"
		"  --leader-elect-namespace NS   the Lease's namespace (default $POD_NAMESPACE,\n"
		"                                then milometer)\n"
		"  --identity ID                 this replica (default $POD_NAME, then host_pid)\n"
		"  --lease-name NAME             default milometer-controller\n"
		"  --translate TARGET=NS/NAME    keep the contract translated in the cluster\n"
		"                                (prometheus-rules, otelcol, kube-state-metrics:\n"
		"                                a ConfigMap; prometheusrule: a PrometheusRule),\n"
		"                                and a Translated condition on each MetricPolicy\n");
}

int controller__main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "kubeconfig", required_argument, NULL, 'k' },
		{ "leader-elect-namespace", required_argument, NULL, 'n' },
		{ "identity", required_argument, NULL, 'i' },
		{ "lease-name", required_argument, NULL, 'l' },
		{ "prometheus-listen", required_argument, NULL, 'p' },
		{ "metrics-auth", required_argument, NULL, 'a' },
		{ "metrics-auth-ttl", required_argument, NULL, 't' },
		{ "metrics-auth-max-entries", required_argument, NULL, 'm' },
		{ "metrics-auth-extra", required_argument, NULL, 'x' },
		{ "prometheus-url", required_argument, NULL, 'u' },
		{ "translate", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct controller_opts o;
	struct k8s_authz_opts *zo = &o.authz;
	char err[1024];
	int opt;

	controller__defaults(&o);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'k':
			o.kubeconfig = optarg;
			break;
		case 'n':
			o.ns = optarg;
			break;
		case 'i':
			o.identity = optarg;
			break;
		case 'l':
			o.lease_name = optarg;
			break;
		case 'p':
			o.listen = optarg;
			break;
		case 'a':
			o.auth = optarg;
			break;
		case 't':
			zo->ttl_s = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'm':
			zo->max_entries = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'x':
			if (zo->nextra >= K8S_AUTHZ_MAX_EXTRA ||
			    !k8s_authz__valid_extra(optarg, err, sizeof(err))) {
				pr_err("--metrics-auth-extra: %s\n",
				       zo->nextra >= K8S_AUTHZ_MAX_EXTRA
					       ? "at most 16"
					       : err);
				return 2;
			}
			zo->extra[zo->nextra++] = optarg;
			break;
		case 'u':
			o.prom_url = optarg;
			break;
		case 'T':
			if (ctrl_translate__add(&o.tr, optarg, err,
						sizeof(err))) {
				pr_err("%s\n", err);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (strcmp(o.auth, "none") && strcmp(o.auth, "kubernetes")) {
		pr_err("--metrics-auth %s: use none or kubernetes\n", o.auth);
		return 2;
	}
	return controller__run(&o);
}
