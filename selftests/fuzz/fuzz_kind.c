// SPDX-License-Identifier: Apache-2.0
/*
 * One manifest kind, built once per kind (-DFUZZ_KIND_...): the input is
 * the object after its apiVersion and kind lines, which the target writes,
 * so mutations stay inside that kind's schema.
 *
 * Gateway and HTTPRoute go through the Gateway API model, the route
 * compiler and lookups of a few requests (route_match__lookup fails with
 * -EPROTO when the kernel table's answer and the precedence walk differ).
 * MetricDefinition, MetricPolicy and ClusterProperty go through `milometer
 * check` (contract, policy engine dry run, rendering) next to a fixed
 * MetricDefinition, Gateway and HTTPRoute for them to refer to.
 */
#include <errno.h>

#include "agent/cmd/check.h"
#include "policy/gateway/gateway_api.h"
#include "policy/gateway/route_compile.h"
#include "policy/gateway/route_match.h"
#include "policy/source/doc.h"
#include "selftests/fuzz/fuzz_util.h"

#if defined(FUZZ_KIND_GATEWAY)
#define PREFIX      "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n"
#define GATEWAY_API 1
#elif defined(FUZZ_KIND_HTTPROUTE)
#define PREFIX      "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
#define GATEWAY_API 1
#elif defined(FUZZ_KIND_METRICDEFINITION)
#define PREFIX                                                                 \
	"apiVersion: telemetry.miloapis.com/v1alpha1\nkind: MetricDefinition\n"
#elif defined(FUZZ_KIND_METRICPOLICY)
#define PREFIX                                                                 \
	"apiVersion: telemetry.miloapis.com/v1alpha1\nkind: MetricPolicy\n"
#elif defined(FUZZ_KIND_CLUSTERPROPERTY)
#define PREFIX "apiVersion: about.k8s.io/v1alpha1\nkind: ClusterProperty\n"
#else
#error "build with -DFUZZ_KIND_<KIND>"
#endif

/* What the fuzzed object may refer to (and, for routes, attach to). */
static const char companions[] =
	"apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n"
	"metadata: {name: gw, namespace: default}\n"
	"spec:\n  listeners:\n"
	"  - {name: http, protocol: HTTP, port: 80,\n"
	"     allowedRoutes: {namespaces: {from: All}}}\n"
	"  - {name: api, protocol: HTTP, port: 80, hostname: \"*.example.com\"}\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
	"metadata: {name: r, namespace: default, uid: u1,\n"
	"  creationTimestamp: \"2024-05-01T10:00:00Z\"}\n"
	"spec:\n  parentRefs: [{name: gw}]\n  hostnames: [a.example.com]\n"
	"  rules:\n  - matches: [{path: {type: PathPrefix, value: /api}}]\n"
	"---\n"
	"apiVersion: telemetry.miloapis.com/v1alpha1\nkind: MetricDefinition\n"
	"metadata: {name: requests}\n"
	"spec:\n  resource: {group: gateway.networking.k8s.io, kind: HTTPRoute}\n"
	"  metric:\n    name: gateway.networking.k8s.io.httproute.request.count\n"
	"    instrument: {type: Counter, unit: \"{request}\"}\n"
	"  labels: [{key: resource_name, required: true}]\n";

#ifdef GATEWAY_API
static const char *const heads[] = {
	"GET /api/x HTTP/1.1\r\nHost: a.example.com\r\n\r\n",
	"POST /v1/items?x=1 HTTP/1.1\r\nHost: b.example.com:80\r\nX-Canary: true\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: other\r\n\r\n",
	"HEAD /api HTTP/1.0\r\n\r\n",
};

static int run(const uint8_t *data, size_t size)
{
	size_t plen = strlen(PREFIX);
	char *buf = malloc(plen + size), err[512];
	struct doc_file *f = NULL, *cf = NULL;
	struct gw_model *m = gateway_api__new();
	struct route_table *t = NULL;

	if (!buf || !m)
		abort();
	memcpy(buf, PREFIX, plen);
	memcpy(buf + plen, data, size);
	if (doc__parse_buf("companions.yaml", companions,
			   sizeof(companions) - 1, &cf, err, sizeof(err)))
		abort();
	for (size_t i = 0; i < cf->ndocs; i++)
		gateway_api__add_doc(m, cf->docs[i], err, sizeof(err));
	if (!doc__parse_buf("fuzz.yaml", buf, plen + size, &f, err,
			    sizeof(err)))
		for (size_t i = 0; i < f->ndocs; i++)
			gateway_api__add_doc(m, f->docs[i], err, sizeof(err));
	if (!route_compile__build(m, NULL, 1, &t, err, sizeof(err))) {
		for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
			struct route_result res;

			if (route_match__lookup_head(t, 0, 0, heads[i],
						     strlen(heads[i]), false,
						     &res) == -EPROTO)
				abort(); /* kernel table disagrees with spec */
		}
		route_compile__free(t);
	}
	gateway_api__free(m);
	doc__free_file(f);
	doc__free_file(cf);
	free(buf);
	return 0;
}
#else
static int run(const uint8_t *data, size_t size)
{
	static const char *comp_path;
	static char comp[128];
	const char *path;
	char *argv[] = {
		"check", "--manifests", NULL, "--manifests", comp, NULL
	};

	if (!comp_path) {
		comp_path = fuzz_file("companions.yaml", companions, NULL, 0);
		snprintf(comp, sizeof(comp), "%s", comp_path);
	}
	path = fuzz_file("object.yaml", PREFIX, data, size);
	argv[2] = (char *)path;
	optind = 1;
	check__run(5, argv, stdout, stderr);
	return 0;
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int quiet;

	if (!quiet++)
		fuzz_quiet();
	return run(data, size);
}
