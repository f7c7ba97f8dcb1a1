// SPDX-License-Identifier: Apache-2.0
/*
 * `milometer run` settings. Precedence: defaults < --config FILE < flags.
 * The config file is YAML; an unknown key or a wrong type is an error that
 * names file:line, so a typo never silently falls back to a default.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOG_MODULE "run"
#include "agent/config/options.h"
#include "policy/source/doc_field.h"
#include "policy/util/log.h"

void options__defaults(struct agent_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->prometheus_listen = "127.0.0.1:9464";
	o->socket_path = "/run/milometer/milometer.sock";
	o->pin_dir = "/sys/fs/bpf/milometer";
	o->export_interval_s = 60; /* OTEL_METRIC_EXPORT_INTERVAL default */
	o->ringbuf_bytes = 4 << 20;
	o->max_connections = 16384;
	o->capture = "auto";
	o->max_series = 10000;
	o->series_idle_s = 300;
	o->otlp_queue_bytes = 8 << 20;
	o->otlp_timeout_ms = 10000;
	o->export_source_metrics = true;
	o->resource_fields = "auto";
	o->node_name = getenv("NODE_NAME");
	o->otlp_headers = getenv("MILOMETER_OTLP_HEADERS");
}

void options__free(struct agent_opts *o)
{
	for (size_t i = 0; i < o->nowned; i++)
		free(o->owned[i]);
	o->nowned = 0;
}

void options__usage(FILE *out)
{
	fprintf(out,
		"usage: milometer run [options]\n"
		"\n"
		"Trace the gateway proxy's HTTP traffic with eBPF, attribute each request to\n"
		"its HTTPRoute rule, and export per-route metrics. Needs root (CAP_BPF,\n"
		"CAP_PERFMON, CAP_SYS_ADMIN to mount bpffs/tracefs).\n"
		"\n"
		"  --config FILE              YAML config; flags override it\n"
		"  --manifests DIR            Gateway/HTTPRoute/MetricDefinition/MetricPolicy\n"
		"                             YAML; changes are picked up while running\n"
		"  --gateway NS/NAME          the Gateway this proxy implements (default: all)\n"
		"  --proxy-exe NAME           trace processes with this executable name or\n"
		"                             path (repeatable); workers forked later too\n"
		"  --proxy-pid PID            trace this process and its children (repeatable)\n"
		"  --proxy-cgroup PATH        trace processes of this cgroup v2 (repeatable)\n"
		"  --listener-port L=S        the proxy accepts the connections of Gateway\n"
		"                             listener port L on socket port S (repeatable;\n"
		"                             default: the Gateway's Service targetPort in a\n"
		"                             cluster, else S = L)\n"
		"  --prometheus-listen ADDR   Prometheus /metrics, /healthz, /readyz\n"
		"                             (default 127.0.0.1:9464; \"\" disables)\n"
		"  --socket PATH              debug socket for `milometer ctl`\n"
		"                             (default /run/milometer/milometer.sock)\n"
		"  --otlp-endpoint URL        push OTLP/HTTP protobuf to URL/v1/metrics\n"
		"  --otlp-headers K=V,...     extra headers (or $MILOMETER_OTLP_HEADERS)\n"
		"  --otlp-ca-file FILE        CA bundle for https endpoints\n"
		"  --otlp-gzip                gzip request bodies\n"
		"  --otlp-tenant-from SRC     one request per tenant: namespace (attribute\n"
		"                             milo.project) or namespace-label:KEY (the\n"
		"                             Namespace's label KEY; attribute KEY)\n"
		"  --otlp-tenant-header NAME  the tenant's header (default X-Scope-OrgID;\n"
		"                             \"\" sends none)\n"
		"  --otlp-tenant-default T    tenant of points bound to no object (default:\n"
		"                             drop them, counted in milometer_export_no_tenant)\n"
		"  --export-interval SECONDS  OTLP export period (default 60)\n"
		"  --ringbuf-bytes N          ring buffer size, power of 2 (default 4194304);\n"
		"                             the agent queues up to 4x this while busy\n"
		"  --max-connections N        sockets tracked at once (default 16384)\n"
		"  --max-series N             series per metric before overflow (default 10000)\n"
		"  --series-idle SECONDS      drop series idle this long (default 300, 0 never)\n"
		"  --no-source-metrics        export only policy targets, not envoy.* sources\n"
		"  --resource-fields MODE     ResourceFields (control-plane) series: auto\n"
		"                             (default: with --manifests; from the API the\n"
		"                             controller makes them once), on, off\n"
		"  --node-name NAME           k8s.node.name, and the node whose Pods are watched\n"
		"                             (default $NODE_NAME, then the hostname)\n"
		"  --kubeconfig FILE          take Gateways, HTTPRoutes, MetricDefinitions and\n"
		"                             MetricPolicies from this cluster's API (default\n"
		"                             without --manifests: $KUBECONFIG, else in-cluster)\n"
		"  --capture MODE             how socket I/O is seen: auto (default: sock when\n"
		"                             the kernel has it), sock (socket tracepoints,\n"
		"                             Linux 6.3+), sys-exit (any kernel 5.10+, costs\n"
		"                             every process on the node a little)\n"
		"  --metrics-auth MODE        who may read /metrics: none (default) or\n"
		"                             kubernetes (bearer token checked by TokenReview;\n"
		"                             get on /metrics reads all, others the series of\n"
		"                             objects they may get: docs/tenancy.md)\n"
		"  --metrics-auth-ttl SECONDS cache authorization decisions (default 30)\n"
		"  --metrics-auth-max-entries N  decisions cached at most (default 10000)\n"
		"  --metrics-auth-extra K=V   add to every SubjectAccessReview's extra\n"
		"                             (repeatable; {namespace} is the object's)\n"
		"  --pin-dir DIR              where maps and programs are pinned while running\n"
		"                             (default /sys/fs/bpf/milometer; one per agent:\n"
		"                             a second agent on the same one is refused)\n"
		"  --feature-gates K=V,...    turn gates on/off, e.g. TLSCapture=true,HTTP2=false\n"
		"                             (repeatable; see `milometer ctl features`)\n"
		"  -v, --verbose              libbpf and debug logs\n"
		"  -h, --help                 this help\n");
}

static char *own(struct agent_opts *o, const char *s)
{
	char *d;

	if (o->nowned >= sizeof(o->owned) / sizeof(o->owned[0]))
		return NULL;
	d = strdup(s);
	if (d)
		o->owned[o->nowned++] = d;
	return d;
}

static int parse_u32(const char *what, const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > UINT32_MAX || s[0] == '-') {
		pr_err("%s: \"%s\" is not a whole number\n", what, s);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int cfg_err(const struct doc_node *n, const char *key, const char *msg)
{
	pr_err("%s:%u: %s: %s\n", n->file ? n->file : "config", n->line, key,
	       msg);
	return -EINVAL;
}

/* A config value of this kind (doc_field's check); null is an error here. */
static int cfg_typed(const struct doc_node *n, const char *key,
		     enum doc_kind kind)
{
	char msg[64];

	if (doc_field__is(n, kind) > 0)
		return 0;
	snprintf(msg, sizeof(msg), "expected %s", doc_field__want(kind));
	return cfg_err(n, key, msg);
}

static int cfg_str(struct agent_opts *o, const struct doc_node *n,
		   const char *key, const char **out)
{
	int err = cfg_typed(n, key, DOC_STRING);

	if (err)
		return err;
	if (strlen(n->str.s) != n->str.len)
		return cfg_err(n, key, "contains a NUL byte");
	if (o->nowned >= sizeof(o->owned) / sizeof(o->owned[0]))
		return cfg_err(
			n, key,
			"too many strings in the config files (at most 128 in all)");
	*out = own(o, n->str.s);
	if (!*out)
		return cfg_err(n, key, "out of memory");
	return 0;
}

static int cfg_u32(const struct doc_node *n, const char *key, uint32_t *out)
{
	int err = cfg_typed(n, key, DOC_INT);

	if (err)
		return err;
	if (n->i < 0 || n->i > UINT32_MAX)
		return cfg_err(n, key, "expected a whole number 0..4294967295");
	*out = n->i;
	return 0;
}

static int cfg_bool(const struct doc_node *n, const char *key, bool *out)
{
	int err = cfg_typed(n, key, DOC_BOOL);

	if (!err)
		*out = n->b;
	return err;
}

static int cfg_list(struct agent_opts *o, const struct doc_node *n,
		    const char *key, const char **arr, size_t *cnt)
{
	if (n->kind == DOC_STRING)
		return *cnt < OPT_MAX_LIST
			       ? cfg_str(o, n, key, &arr[(*cnt)++])
			       : cfg_err(n, key, "too many entries");
	if (n->kind != DOC_LIST)
		return cfg_err(n, key, "expected a list of strings");
	for (size_t i = 0; i < n->list.n; i++) {
		int err;

		if (*cnt >= OPT_MAX_LIST)
			return cfg_err(n, key, "too many entries (max 32)");
		err = cfg_str(o, n->list.items[i], key, &arr[(*cnt)++]);
		if (err)
			return err;
	}
	return 0;
}

static int cfg_proxy(struct agent_opts *o, const struct doc_node *n)
{
	int err = 0;

	if (n->kind != DOC_MAP)
		return cfg_err(n, "proxy",
			       "expected a map with exe, pid, cgroup");
	for (size_t i = 0; i < n->map.n && !err; i++) {
		const char *k = n->map.keys[i];
		const struct doc_node *v = n->map.vals[i];

		if (!strcmp(k, "exe")) {
			err = cfg_list(o, v, "proxy.exe", o->proxy_exe,
				       &o->nproxy_exe);
		} else if (!strcmp(k, "cgroup")) {
			err = cfg_list(o, v, "proxy.cgroup", o->proxy_cgroup,
				       &o->nproxy_cgroup);
		} else if (!strcmp(k, "pid")) {
			const struct doc_node *one = v;
			size_t cnt = v->kind == DOC_LIST ? v->list.n : 1;

			for (size_t j = 0; j < cnt && !err; j++) {
				if (v->kind == DOC_LIST)
					one = v->list.items[j];
				if (one->kind != DOC_INT || one->i <= 0 ||
				    one->i > INT_MAX ||
				    o->nproxy_pid >= OPT_MAX_LIST)
					err = cfg_err(one, "proxy.pid",
						      "expected process ids");
				else
					o->proxy_pid[o->nproxy_pid++] = one->i;
			}
		} else {
			err = cfg_err(
				v, k,
				"unknown key under proxy (exe, pid, cgroup)");
		}
	}
	return err;
}

static int cfg_otlp(struct agent_opts *o, const struct doc_node *n)
{
	int err = 0;

	if (n->kind != DOC_MAP)
		return cfg_err(n, "otlp", "expected a map");
	for (size_t i = 0; i < n->map.n && !err; i++) {
		const char *k = n->map.keys[i];
		const struct doc_node *v = n->map.vals[i];

		if (!strcmp(k, "endpoint"))
			err = cfg_str(o, v, "otlp.endpoint", &o->otlp_endpoint);
		else if (!strcmp(k, "headers"))
			err = cfg_str(o, v, "otlp.headers", &o->otlp_headers);
		else if (!strcmp(k, "caFile"))
			err = cfg_str(o, v, "otlp.caFile", &o->otlp_ca_file);
		else if (!strcmp(k, "gzip"))
			err = cfg_bool(v, "otlp.gzip", &o->otlp_gzip);
		else if (!strcmp(k, "queueBytes"))
			err = cfg_u32(v, "otlp.queueBytes",
				      &o->otlp_queue_bytes);
		else if (!strcmp(k, "timeoutMs"))
			err = cfg_u32(v, "otlp.timeoutMs", &o->otlp_timeout_ms);
		else if (!strcmp(k, "exportInterval"))
			err = cfg_u32(v, "otlp.exportInterval",
				      &o->export_interval_s);
		else if (!strcmp(k, "tenantFrom"))
			err = cfg_str(o, v, "otlp.tenantFrom",
				      &o->otlp_tenant_from);
		else if (!strcmp(k, "tenantHeader"))
			err = cfg_str(o, v, "otlp.tenantHeader",
				      &o->otlp_tenant_header);
		else if (!strcmp(k, "tenantDefault"))
			err = cfg_str(o, v, "otlp.tenantDefault",
				      &o->otlp_tenant_default);
		else
			err = cfg_err(
				v, k,
				"unknown key under otlp (endpoint, headers, caFile, gzip, queueBytes, timeoutMs, exportInterval, tenantFrom, tenantHeader, tenantDefault)");
	}
	return err;
}

static int add_auth_extra(struct agent_opts *o, const char *kv)
{
	if (o->nmetrics_auth_extra >= 16) {
		pr_err("at most 16 metrics-auth extra fields\n");
		return -EINVAL;
	}
	if (!kv || !strchr(kv, '=') || kv[0] == '=') {
		pr_err("metrics-auth extra \"%s\": write KEY=VALUE, e.g. iam.miloapis.com/parent-type=Project\n",
		       kv ? kv : "");
		return -EINVAL;
	}
	o->metrics_auth_extra[o->nmetrics_auth_extra++] = kv;
	return 0;
}

/* metricsAuth: {mode, cacheTTL, maxEntries, extra: [K=V...]} */
static int cfg_metrics_auth(struct agent_opts *o, const struct doc_node *n)
{
	int err = cfg_typed(n, "metricsAuth", DOC_MAP);

	for (size_t i = 0; !err && i < n->map.n; i++) {
		const char *k = n->map.keys[i];
		const struct doc_node *v = n->map.vals[i];

		if (!strcmp(k, "mode"))
			err = cfg_str(o, v, "metricsAuth.mode",
				      &o->metrics_auth);
		else if (!strcmp(k, "cacheTTL"))
			err = cfg_u32(v, "metricsAuth.cacheTTL",
				      &o->metrics_auth_ttl_s);
		else if (!strcmp(k, "maxEntries"))
			err = cfg_u32(v, "metricsAuth.maxEntries",
				      &o->metrics_auth_max);
		else if (!strcmp(k, "extra")) {
			err = cfg_typed(v, "metricsAuth.extra", DOC_LIST);
			for (size_t j = 0; !err && j < v->list.n; j++) {
				const char *kv = NULL;

				err = cfg_str(o, v->list.items[j],
					      "metricsAuth.extra", &kv);
				if (!err)
					err = add_auth_extra(o, kv);
			}
		} else
			err = cfg_err(
				v, k,
				"unknown key under metricsAuth (mode, cacheTTL, maxEntries, extra)");
	}
	return err;
}

/* featureGates: {TLSCapture: true} */
static int cfg_features(struct feature_overrides *ov, const struct doc_node *n)
{
	char err[512];
	int ret = features__parse_node(features__default_specs, FEATURE__COUNT,
				       n, ov, err, sizeof(err));

	if (ret)
		pr_err("%s\n", err);
	return ret;
}

int options__listener_port(struct agent_opts *o, const char *arg,
			   const char *where)
{
	unsigned long l, s;
	char *end;
	size_t i;

	errno = 0;
	l = strtoul(arg, &end, 10);
	if (*end == '=' && end != arg && end[1] >= '0' && end[1] <= '9')
		s = strtoul(end + 1, &end, 10);
	else
		s = 0;
	if (errno || *end || !l || !s || l > 65535 || s > 65535) {
		pr_err("%s \"%s\": write it as "
		       "LISTENER_PORT=SOCKET_PORT, e.g. 80=10080 (ports 1-65535)\n",
		       where, arg);
		return -EINVAL;
	}
	for (i = 0; i < o->nlistener_port; i++)
		if (o->listener_port[i][0] == l)
			break;
	if (i == OPT_MAX_LIST) {
		pr_err("%s: at most %d listener ports\n", where, OPT_MAX_LIST);
		return -EINVAL;
	}
	o->listener_port[i][0] = (uint16_t)l;
	o->listener_port[i][1] = (uint16_t)s;
	if (i == o->nlistener_port)
		o->nlistener_port++;
	return 0;
}

/* listenerPorts: ["80=10080", ...] */
static int cfg_listener_ports(struct agent_opts *o, const struct doc_node *n)
{
	size_t cnt = n->kind == DOC_LIST ? n->list.n : 1;
	int err = 0;

	for (size_t j = 0; j < cnt && !err; j++) {
		const struct doc_node *one =
			n->kind == DOC_LIST ? n->list.items[j] : n;

		if (one->kind != DOC_STRING)
			return cfg_err(one, "listenerPorts",
				       "expected "
				       "\"LISTENER_PORT=SOCKET_PORT\" strings");
		err = options__listener_port(o, one->str.s,
					     "config listenerPorts");
	}
	return err;
}

static int load_config(struct agent_opts *o, const char *path)
{
	struct doc_file *f = NULL;
	const struct doc_node *root;
	char err[512];
	int ret;

	ret = doc__parse_file(path, &f, err, sizeof(err));
	if (ret) {
		pr_err("%s\n", err);
		return -EINVAL;
	}
	if (f->ndocs == 0) {
		doc__free_file(f);
		return 0;
	}
	root = f->docs[0];
	if (f->ndocs > 1 || root->kind != DOC_MAP) {
		ret = cfg_err(root, "config", "expected one YAML map");
		goto cleanup;
	}
	for (size_t i = 0; i < root->map.n && !ret; i++) {
		const char *k = root->map.keys[i];
		const struct doc_node *v = root->map.vals[i];

		if (!strcmp(k, "manifests"))
			ret = cfg_str(o, v, k, &o->manifests);
		else if (!strcmp(k, "gateway"))
			ret = cfg_str(o, v, k, &o->gateway);
		else if (!strcmp(k, "proxy"))
			ret = cfg_proxy(o, v);
		else if (!strcmp(k, "listenerPorts"))
			ret = cfg_listener_ports(o, v);
		else if (!strcmp(k, "prometheusListen"))
			ret = cfg_str(o, v, k, &o->prometheus_listen);
		else if (!strcmp(k, "socket"))
			ret = cfg_str(o, v, k, &o->socket_path);
		else if (!strcmp(k, "otlp"))
			ret = cfg_otlp(o, v);
		else if (!strcmp(k, "exportInterval"))
			ret = cfg_u32(v, k, &o->export_interval_s);
		else if (!strcmp(k, "ringbufBytes"))
			ret = cfg_u32(v, k, &o->ringbuf_bytes);
		else if (!strcmp(k, "maxConnections"))
			ret = cfg_u32(v, k, &o->max_connections);
		else if (!strcmp(k, "maxSeries"))
			ret = cfg_u32(v, k, &o->max_series);
		else if (!strcmp(k, "seriesIdleSeconds"))
			ret = cfg_u32(v, k, &o->series_idle_s);
		else if (!strcmp(k, "exportSourceMetrics"))
			ret = cfg_bool(v, k, &o->export_source_metrics);
		else if (!strcmp(k, "resourceFields"))
			ret = cfg_str(o, v, k, &o->resource_fields);
		else if (!strcmp(k, "nodeName"))
			ret = cfg_str(o, v, k, &o->node_name);
		else if (!strcmp(k, "pinDir"))
			ret = cfg_str(o, v, k, &o->pin_dir);
		else if (!strcmp(k, "capture"))
			ret = cfg_str(o, v, k, &o->capture);
		else if (!strcmp(k, "kubeconfig"))
			ret = cfg_str(o, v, k, &o->kubeconfig);
		else if (!strcmp(k, "featureGates"))
			ret = cfg_features(&o->fg_config, v);
		else if (!strcmp(k, "metricsAuth"))
			ret = cfg_metrics_auth(o, v);
		else
			ret = cfg_err(
				v, k,
				"unknown key (see milometer run --help; keys are manifests, gateway, proxy, listenerPorts, prometheusListen, socket, otlp, exportInterval, ringbufBytes, maxConnections, maxSeries, seriesIdleSeconds, exportSourceMetrics, resourceFields, nodeName, pinDir, capture, kubeconfig, featureGates, metricsAuth)");
	}
cleanup:
	doc__free_file(f);
	return ret;
}

/*
 * Kubernetes: the API is the source unless --manifests says otherwise:
 * with --kubeconfig, $KUBECONFIG, or in a pod (KUBERNETES_SERVICE_HOST).
 */
static void k8s_defaults(struct agent_opts *o)
{
	if (!o->node_name || !o->node_name[0]) {
		if (!gethostname(o->node_buf, sizeof(o->node_buf) - 1) &&
		    o->node_buf[0])
			o->node_name = o->node_buf;
	}
	o->use_api = !o->manifests &&
		     (o->kubeconfig ||
		      (getenv("KUBECONFIG") && getenv("KUBECONFIG")[0]) ||
		      getenv("KUBERNETES_SERVICE_HOST"));
}

static int validate(const struct agent_opts *o)
{
	uint32_t rb = o->ringbuf_bytes;

	if (o->kubeconfig && o->manifests) {
		pr_err("--kubeconfig and --manifests both name the source of routes: pick one\n");
		return -EINVAL;
	}
	/* with the API, proxy pods are found by their Gateway label */
	if (!o->nproxy_exe && !o->nproxy_pid && !o->nproxy_cgroup &&
	    !o->use_api) {
		pr_err("say which processes are the proxy: "
		       "--proxy-exe NAME, --proxy-pid PID or --proxy-cgroup PATH "
		       "(in a cluster, proxy pods are found from the API)\n");
		return -EINVAL;
	}
	if (rb < 4096 || (rb & (rb - 1))) {
		pr_err("--ringbuf-bytes %u: must be a power of two >= 4096\n",
		       rb);
		return -EINVAL;
	}
	if (strcmp(o->capture, "auto") && strcmp(o->capture, "sock") &&
	    strcmp(o->capture, "sys-exit")) {
		pr_err("--capture %s: use auto, sock or sys-exit\n",
		       o->capture);
		return -EINVAL;
	}
	if (strcmp(o->resource_fields, "auto") &&
	    strcmp(o->resource_fields, "on") &&
	    strcmp(o->resource_fields, "off")) {
		pr_err("--resource-fields %s: use auto, on or off\n",
		       o->resource_fields);
		return -EINVAL;
	}
	if (o->max_connections < 64) {
		pr_err("--max-connections must be at least 64\n");
		return -EINVAL;
	}
	if (o->otlp_endpoint && !o->export_interval_s) {
		pr_err("--export-interval must be at least 1 second\n");
		return -EINVAL;
	}
	if (o->metrics_auth && strcmp(o->metrics_auth, "none") &&
	    strcmp(o->metrics_auth, "kubernetes")) {
		pr_err("--metrics-auth %s: use none or kubernetes\n",
		       o->metrics_auth);
		return -EINVAL;
	}
	if (o->otlp_tenant_from && strcmp(o->otlp_tenant_from, "namespace") &&
	    (strncmp(o->otlp_tenant_from, "namespace-label:", 16) ||
	     !o->otlp_tenant_from[16])) {
		pr_err("--otlp-tenant-from %s: use namespace or namespace-label:KEY\n",
		       o->otlp_tenant_from);
		return -EINVAL;
	}
	if (o->gateway && !strchr(o->gateway, '/')) {
		pr_err("--gateway %s: expected NAMESPACE/NAME\n", o->gateway);
		return -EINVAL;
	}
	return 0;
}

int options__parse(struct agent_opts *o, int argc, char **argv)
{
	enum {
		O_MANIFESTS = 256,
		O_GATEWAY,
		O_EXE,
		O_PID,
		O_CGROUP,
		O_PROM,
		O_SOCKET,
		O_OTLP,
		O_OTLP_HDR,
		O_OTLP_CA,
		O_OTLP_GZIP,
		O_INTERVAL,
		O_RINGBUF,
		O_MAXCONN,
		O_MAXSERIES,
		O_IDLE,
		O_NOSRC,
		O_NODE,
		O_CONFIG,
		O_PINDIR,
		O_CAPTURE,
		O_KUBECONFIG,
		O_FGATES,
		O_RFIELDS,
		O_MAUTH,
		O_MAUTH_TTL,
		O_MAUTH_MAX,
		O_MAUTH_EXTRA,
		O_TENANT_FROM,
		O_TENANT_HDR,
		O_TENANT_DEFAULT,
		O_LPORT,
	};
	static const struct option lopts[] = {
		{ "config", required_argument, NULL, O_CONFIG },
		{ "manifests", required_argument, NULL, O_MANIFESTS },
		{ "gateway", required_argument, NULL, O_GATEWAY },
		{ "proxy-exe", required_argument, NULL, O_EXE },
		{ "proxy-pid", required_argument, NULL, O_PID },
		{ "proxy-cgroup", required_argument, NULL, O_CGROUP },
		{ "listener-port", required_argument, NULL, O_LPORT },
		{ "prometheus-listen", required_argument, NULL, O_PROM },
		{ "socket", required_argument, NULL, O_SOCKET },
		{ "otlp-endpoint", required_argument, NULL, O_OTLP },
		{ "otlp-headers", required_argument, NULL, O_OTLP_HDR },
		{ "otlp-ca-file", required_argument, NULL, O_OTLP_CA },
		{ "otlp-gzip", no_argument, NULL, O_OTLP_GZIP },
		{ "otlp-tenant-from", required_argument, NULL, O_TENANT_FROM },
		{ "otlp-tenant-header", required_argument, NULL, O_TENANT_HDR },
		{ "otlp-tenant-default", required_argument, NULL,
		  O_TENANT_DEFAULT },
		{ "export-interval", required_argument, NULL, O_INTERVAL },
		{ "ringbuf-bytes", required_argument, NULL, O_RINGBUF },
		{ "max-connections", required_argument, NULL, O_MAXCONN },
		{ "max-series", required_argument, NULL, O_MAXSERIES },
		{ "series-idle", required_argument, NULL, O_IDLE },
		{ "no-source-metrics", no_argument, NULL, O_NOSRC },
		{ "resource-fields", required_argument, NULL, O_RFIELDS },
		{ "node-name", required_argument, NULL, O_NODE },
		{ "pin-dir", required_argument, NULL, O_PINDIR },
		{ "capture", required_argument, NULL, O_CAPTURE },
		{ "kubeconfig", required_argument, NULL, O_KUBECONFIG },
		{ "feature-gates", required_argument, NULL, O_FGATES },
		{ "metrics-auth", required_argument, NULL, O_MAUTH },
		{ "metrics-auth-ttl", required_argument, NULL, O_MAUTH_TTL },
		{ "metrics-auth-max-entries", required_argument, NULL,
		  O_MAUTH_MAX },
		{ "metrics-auth-extra", required_argument, NULL,
		  O_MAUTH_EXTRA },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c, err = 0;
	uint32_t u;

	/* the config file first, whatever its position, so flags win */
	for (int i = 1; i < argc; i++) {
		const char *path = NULL;

		if (!strcmp(argv[i], "--config") && i + 1 < argc)
			path = argv[i + 1];
		else if (!strncmp(argv[i], "--config=", 9))
			path = argv[i] + 9;
		if (path) {
			o->config_file = path;
			err = load_config(o, path);
			if (err)
				return err;
		}
	}
	optind = 1;
	opterr = 1;
	while ((c = getopt_long(argc, argv, "vh", lopts, NULL)) != -1 && !err) {
		switch (c) {
		case O_CONFIG:
			break;
		case O_MANIFESTS:
			o->manifests = optarg;
			break;
		case O_GATEWAY:
			o->gateway = optarg;
			break;
		case O_EXE:
			if (o->nproxy_exe >= OPT_MAX_LIST)
				goto too_many;
			o->proxy_exe[o->nproxy_exe++] = optarg;
			break;
		case O_PID:
			if (o->nproxy_pid >= OPT_MAX_LIST)
				goto too_many;
			err = parse_u32("--proxy-pid", optarg, &u);
			if (!err && (u == 0 || u > INT_MAX)) {
				pr_err("--proxy-pid %s: not a process id\n",
				       optarg);
				err = -EINVAL;
			}
			o->proxy_pid[o->nproxy_pid++] = u;
			break;
		case O_CGROUP:
			if (o->nproxy_cgroup >= OPT_MAX_LIST)
				goto too_many;
			o->proxy_cgroup[o->nproxy_cgroup++] = optarg;
			break;
		case O_LPORT:
			err = options__listener_port(o, optarg,
						     "--listener-port");
			break;
		case O_PROM:
			o->prometheus_listen = optarg;
			break;
		case O_SOCKET:
			o->socket_path = optarg;
			break;
		case O_OTLP:
			o->otlp_endpoint = optarg;
			break;
		case O_OTLP_HDR:
			o->otlp_headers = optarg;
			break;
		case O_OTLP_CA:
			o->otlp_ca_file = optarg;
			break;
		case O_OTLP_GZIP:
			o->otlp_gzip = true;
			break;
		case O_TENANT_FROM:
			o->otlp_tenant_from = optarg;
			break;
		case O_TENANT_HDR:
			o->otlp_tenant_header = optarg;
			break;
		case O_TENANT_DEFAULT:
			o->otlp_tenant_default = optarg;
			break;
		case O_INTERVAL:
			err = parse_u32("--export-interval", optarg,
					&o->export_interval_s);
			break;
		case O_RINGBUF:
			err = parse_u32("--ringbuf-bytes", optarg,
					&o->ringbuf_bytes);
			break;
		case O_MAXCONN:
			err = parse_u32("--max-connections", optarg,
					&o->max_connections);
			break;
		case O_CAPTURE:
			o->capture = optarg;
			break;
		case O_MAXSERIES:
			err = parse_u32("--max-series", optarg, &o->max_series);
			break;
		case O_IDLE:
			err = parse_u32("--series-idle", optarg,
					&o->series_idle_s);
			break;
		case O_NOSRC:
			o->export_source_metrics = false;
			break;
		case O_RFIELDS:
			o->resource_fields = optarg;
			break;
		case O_NODE:
			o->node_name = optarg;
			break;
		case O_PINDIR:
			o->pin_dir = optarg;
			break;
		case O_KUBECONFIG:
			o->kubeconfig = optarg;
			break;
		case O_MAUTH:
			o->metrics_auth = optarg;
			break;
		case O_MAUTH_TTL:
			err = parse_u32("--metrics-auth-ttl", optarg,
					&o->metrics_auth_ttl_s);
			break;
		case O_MAUTH_MAX:
			err = parse_u32("--metrics-auth-max-entries", optarg,
					&o->metrics_auth_max);
			break;
		case O_MAUTH_EXTRA:
			err = add_auth_extra(o, optarg);
			break;
		case O_FGATES: {
			char ferr[512];

			err = features__parse(features__default_specs,
					      FEATURE__COUNT, optarg,
					      &o->fg_flags, ferr, sizeof(ferr));
			if (err)
				pr_err("%s\n", ferr);
			break;
		}
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			options__usage(stdout);
			return 1;
		default:
			fprintf(stderr, "see: milometer run --help\n");
			return -EINVAL;
		}
	}
	if (err)
		return err;
	if (optind < argc) {
		pr_err("unexpected argument \"%s\" (see --help)\n",
		       argv[optind]);
		return -EINVAL;
	}
	k8s_defaults(o);
	return validate(o);
too_many:
	pr_err("at most %d of each --proxy-* option\n", OPT_MAX_LIST);
	return -EINVAL;
}
