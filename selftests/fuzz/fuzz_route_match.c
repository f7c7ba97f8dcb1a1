// SPDX-License-Identifier: Apache-2.0
/*
 * The route compiler and matcher against the precedence walk `explain`
 * prints. Input: Gateway API manifests, then "\n%%\n", then raw HTTP
 * request heads separated by "\n%%\n". Every head is looked up the way the
 * BPF program does and the way user space finishes deferred requests;
 * route_match__lookup fails with -EPROTO when the kernel table's answer
 * differs from the Gateway API order: that is a finding (abort).
 */
#include <errno.h>

#include "policy/gateway/gateway_api.h"
#include "policy/gateway/route_compile.h"
#include "policy/gateway/route_match.h"
#include "policy/source/doc.h"
#include "selftests/fuzz/fuzz_util.h"

static const char gateway[] =
	"apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n"
	"metadata: {name: gw, namespace: default}\n"
	"spec:\n  listeners:\n"
	"  - {name: http, protocol: HTTP, port: 80,\n"
	"     allowedRoutes: {namespaces: {from: All}}}\n";

static const char *find_sep(const char *p, const char *end)
{
	for (; p + 4 <= end; p++)
		if (!memcmp(p, "\n%%\n", 4))
			return p;
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data, *end = in + size;
	const char *sep = find_sep(in, end);
	size_t ylen = sep ? (size_t)(sep - in) : size;
	struct doc_file *f = NULL, *gf = NULL;
	struct gw_model *m = gateway_api__new();
	struct route_table *t = NULL;
	char err[512];
	int n = 0;

	if (!m || doc__parse_buf("gw.yaml", gateway, sizeof(gateway) - 1, &gf,
				 err, sizeof(err)))
		abort();
	gateway_api__add_doc(m, gf->docs[0], err, sizeof(err));
	if (!doc__parse_buf("fuzz.yaml", in, ylen, &f, err, sizeof(err)))
		for (size_t i = 0; i < f->ndocs; i++)
			gateway_api__add_doc(m, f->docs[i], err, sizeof(err));
	if (route_compile__build(m, NULL, 1, &t, err, sizeof(err)))
		goto cleanup;
	for (const char *p = sep ? sep + 4 : end; p < end && n < 64; n++) {
		const char *next = find_sep(p, end);
		size_t len = next ? (size_t)(next - p) : (size_t)(end - p);
		struct route_result res;

		if (route_match__lookup_head(t, 0, 0, p, len, n & 1, &res) ==
		    -EPROTO)
			abort();
		p = next ? next + 4 : end;
	}
	route_compile__free(t);
cleanup:
	gateway_api__free(m);
	doc__free_file(f);
	doc__free_file(gf);
	return 0;
}
