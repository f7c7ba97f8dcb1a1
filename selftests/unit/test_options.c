// SPDX-License-Identifier: Apache-2.0
/*
 * agent/config/options.c, what `milometer run` parses: defaults, every config-file
 * key, flags overriding the file wherever --config stands, and the errors
 * that must stop the agent (each says what to fix).
 */
#include <errno.h>
#include <stdlib.h>

#include "agent/config/options.h"
#include "selftests/unit/test.h"

static int parse(struct agent_opts *o, char **argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	options__defaults(o);
	return options__parse(o, argc, argv);
}

static const char *write_config(const char *text)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/config.yaml", test__tmpdir());
	f = fopen(path, "w");
	if (!f)
		return NULL;
	fputs(text, f);
	fclose(f);
	return path;
}

TEST(options_defaults_and_flags)
{
	char *argv[] = { "run",
			 "--proxy-exe",
			 "nginx",
			 "--proxy-pid",
			 "42",
			 "--manifests",
			 "/m",
			 "--gateway",
			 "ns/gw",
			 "--max-series",
			 "77",
			 "--series-idle",
			 "0",
			 "--no-source-metrics",
			 "--otlp-endpoint",
			 "http://c:4318",
			 "--export-interval",
			 "15",
			 "-v",
			 NULL };
	struct agent_opts o;

	if (!ASSERT_EQ(parse(&o, argv), 0))
		return;
	ASSERT_EQ(o.nproxy_exe, 1);
	ASSERT_STREQ(o.proxy_exe[0], "nginx");
	ASSERT_EQ(o.nproxy_pid, 1);
	ASSERT_EQ(o.proxy_pid[0], 42);
	ASSERT_STREQ(o.manifests, "/m");
	ASSERT_STREQ(o.gateway, "ns/gw");
	ASSERT_EQ(o.max_series, 77);
	ASSERT_EQ(o.series_idle_s, 0);
	ASSERT_TRUE(!o.export_source_metrics);
	ASSERT_STREQ(o.otlp_endpoint, "http://c:4318");
	ASSERT_EQ(o.export_interval_s, 15);
	ASSERT_TRUE(o.verbose);
	/* untouched defaults */
	ASSERT_STREQ(o.prometheus_listen, "127.0.0.1:9464");
	ASSERT_EQ(o.ringbuf_bytes, 4 << 20);
	ASSERT_EQ(o.max_connections, 16384);
	options__free(&o);
}

TEST(options_config_file_every_key_flags_win)
{
	const char *path = write_config("manifests: /etc/mm/manifests\n"
					"gateway: infra/edge\n"
					"proxy:\n"
					"  exe: [nginx, haproxy]\n"
					"  pid: [10, 11]\n"
					"  cgroup: /sys/fs/cgroup/gw\n"
					"prometheusListen: 0.0.0.0:9999\n"
					"socket: /tmp/mm.sock\n"
					"otlp:\n"
					"  endpoint: https://collector:4318\n"
					"  headers: a=b\n"
					"  caFile: /ca.pem\n"
					"  gzip: true\n"
					"  queueBytes: 1048576\n"
					"  timeoutMs: 2500\n"
					"  exportInterval: 30\n"
					"ringbufBytes: 65536\n"
					"maxConnections: 1024\n"
					"maxSeries: 500\n"
					"seriesIdleSeconds: 60\n"
					"exportSourceMetrics: false\n"
					"nodeName: node-7\n"
					"pinDir: /sys/fs/bpf/mm2\n");
	/* the flag comes before --config and still wins over the file */
	char *argv[] = { "run",      "--max-series", "9",
			 "--config", (char *)path,   NULL };
	struct agent_opts o;

	if (!ASSERT_TRUE(path) || !ASSERT_EQ(parse(&o, argv), 0))
		return;
	ASSERT_STREQ(o.manifests, "/etc/mm/manifests");
	ASSERT_STREQ(o.gateway, "infra/edge");
	ASSERT_EQ(o.nproxy_exe, 2);
	ASSERT_STREQ(o.proxy_exe[1], "haproxy");
	ASSERT_EQ(o.nproxy_pid, 2);
	ASSERT_EQ(o.proxy_pid[1], 11);
	ASSERT_EQ(o.nproxy_cgroup, 1);
	ASSERT_STREQ(o.proxy_cgroup[0], "/sys/fs/cgroup/gw");
	ASSERT_STREQ(o.prometheus_listen, "0.0.0.0:9999");
	ASSERT_STREQ(o.socket_path, "/tmp/mm.sock");
	ASSERT_STREQ(o.otlp_endpoint, "https://collector:4318");
	ASSERT_STREQ(o.otlp_headers, "a=b");
	ASSERT_STREQ(o.otlp_ca_file, "/ca.pem");
	ASSERT_TRUE(o.otlp_gzip);
	ASSERT_EQ(o.otlp_queue_bytes, 1048576);
	ASSERT_EQ(o.otlp_timeout_ms, 2500);
	ASSERT_EQ(o.export_interval_s, 30);
	ASSERT_EQ(o.ringbuf_bytes, 65536);
	ASSERT_EQ(o.max_connections, 1024);
	ASSERT_EQ(o.max_series, 9);
	ASSERT_EQ(o.series_idle_s, 60);
	ASSERT_TRUE(!o.export_source_metrics);
	ASSERT_STREQ(o.node_name, "node-7");
	ASSERT_STREQ(o.pin_dir, "/sys/fs/bpf/mm2");
	options__free(&o);
}

TEST(options_rejects_what_must_be_fixed)
{
	static const char *const configs[] = {
		"maxSeries: many\n",               /* not a number */
		"proxy: {exe: nginx, port: 80}\n", /* unknown key */
		"nope: 1\n",                       /* unknown top-level key */
		"otlp: {gzip: 3}\n",               /* not a bool */
		"- a\n- b\n",                      /* not a map */
	};
	char *no_proxy[] = { "run", NULL };
	char *bad_rb[] = { "run",  "--proxy-exe", "x", "--ringbuf-bytes",
			   "5000", NULL };
	char *bad_gw[] = { "run", "--proxy-exe", "x", "--gateway", "gw", NULL };
	char *bad_pid[] = { "run", "--proxy-pid", "-3", NULL };
	char *bad_conn[] = { "run", "--proxy-exe", "x", "--max-connections",
			     "10",  NULL };
	char *extra[] = { "run", "--proxy-exe", "x", "stray", NULL };
	char *help[] = { "run", "--help", NULL };
	struct agent_opts o;

	ASSERT_EQ(parse(&o, no_proxy), -EINVAL);
	ASSERT_EQ(parse(&o, bad_rb), -EINVAL);
	ASSERT_EQ(parse(&o, bad_gw), -EINVAL);
	ASSERT_EQ(parse(&o, bad_pid), -EINVAL);
	ASSERT_EQ(parse(&o, bad_conn), -EINVAL);
	ASSERT_EQ(parse(&o, extra), -EINVAL);
	ASSERT_EQ(parse(&o, help), 1);
	for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++) {
		const char *path = write_config(configs[i]);
		char *argv[] = { "run",      "--proxy-exe", "x",
				 "--config", (char *)path,  NULL };

		ASSERT_EQ(parse(&o, argv), -EINVAL);
		options__free(&o);
	}
}

/* metricsAuth and otlp tenancy: config keys, flags over them, and what is refused */
TEST(options_metrics_auth_and_tenancy)
{
	const char *path =
		write_config("manifests: /m\n"
			     "proxy: {exe: [nginx]}\n"
			     "metricsAuth:\n"
			     "  mode: kubernetes\n"
			     "  cacheTTL: 7\n"
			     "  maxEntries: 99\n"
			     "  extra: [iam.miloapis.com/parent-type=Project]\n"
			     "otlp:\n"
			     "  endpoint: http://c:4318\n"
			     "  tenantFrom: namespace-label:tenant\n"
			     "  tenantHeader: THANOS-TENANT\n"
			     "  tenantDefault: platform\n");
	char *argv[] = { "run",        "--config",
			 (char *)path, "--metrics-auth-ttl",
			 "9",          "--metrics-auth-extra",
			 "k=v",        NULL };
	char *bad_mode[] = { "run", "--manifests",    "/m",   "--proxy-exe",
			     "x",   "--metrics-auth", "rbac", NULL };
	char *bad_extra[] = { "run",     "--manifests",
			      "/m",      "--proxy-exe",
			      "x",       "--metrics-auth-extra",
			      "novalue", NULL };
	char *bad_tenant[] = { "run",   "--manifests",
			       "/m",    "--proxy-exe",
			       "x",     "--otlp-tenant-from",
			       "label", NULL };
	struct agent_opts o;

	if (!ASSERT_TRUE(path) || !ASSERT_EQ(parse(&o, argv), 0))
		return;
	ASSERT_STREQ(o.metrics_auth, "kubernetes");
	ASSERT_EQ(o.metrics_auth_ttl_s, 9);
	ASSERT_EQ(o.metrics_auth_max, 99);
	ASSERT_EQ(o.nmetrics_auth_extra, 2);
	ASSERT_STREQ(o.metrics_auth_extra[0],
		     "iam.miloapis.com/parent-type=Project");
	ASSERT_STREQ(o.metrics_auth_extra[1], "k=v");
	ASSERT_STREQ(o.otlp_tenant_from, "namespace-label:tenant");
	ASSERT_STREQ(o.otlp_tenant_header, "THANOS-TENANT");
	ASSERT_STREQ(o.otlp_tenant_default, "platform");
	options__free(&o);
	ASSERT_EQ(parse(&o, bad_mode), -EINVAL);
	options__free(&o);
	ASSERT_EQ(parse(&o, bad_extra), -EINVAL);
	options__free(&o);
	ASSERT_EQ(parse(&o, bad_tenant), -EINVAL);
	options__free(&o);
}

TEST(options_listener_ports)
{
	const char *path =
		write_config("proxy: {exe: nginx}\n"
			     "listenerPorts: [\"80=10080\", \"443=10443\"]\n");
	char *argv[] = { "run",        "--config",
			 (char *)path, "--listener-port",
			 "443=18443",  "--listener-port",
			 "8080=18080", NULL };
	char *bad[][4] = {
		{ "run", "--proxy-exe=nginx", "--listener-port=80", NULL },
		{ "run", "--proxy-exe=nginx", "--listener-port=80=", NULL },
		{ "run", "--proxy-exe=nginx", "--listener-port=0=10080", NULL },
		{ "run", "--proxy-exe=nginx", "--listener-port=80=65536",
		  NULL },
		{ "run", "--proxy-exe=nginx", "--listener-port=80=1x", NULL },
	};
	struct agent_opts o;

	if (!ASSERT_TRUE(path) || !ASSERT_EQ(parse(&o, argv), 0))
		return;
	/* the flag remaps the file's 443, and adds 8080 */
	ASSERT_EQ(o.nlistener_port, 3);
	ASSERT_EQ(o.listener_port[0][0], 80);
	ASSERT_EQ(o.listener_port[0][1], 10080);
	ASSERT_EQ(o.listener_port[1][0], 443);
	ASSERT_EQ(o.listener_port[1][1], 18443);
	ASSERT_EQ(o.listener_port[2][0], 8080);
	ASSERT_EQ(o.listener_port[2][1], 18080);
	options__free(&o);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT_EQ(parse(&o, bad[i]), -EINVAL);
		options__free(&o);
	}
	path = write_config("proxy: {exe: nginx}\nlistenerPorts: [80]\n");
	{
		char *cfg[] = { "run", "--config", (char *)path, NULL };

		ASSERT_EQ(parse(&o, cfg), -EINVAL);
		options__free(&o);
	}
}
