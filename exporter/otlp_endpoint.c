// SPDX-License-Identifier: Apache-2.0
/* OTLP/HTTP endpoint URL resolution; see otlp_endpoint.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "exporter/otlp_endpoint.h"

static const char suffix[] = "/v1/metrics";

/* path with "/v1/metrics" appended unless it ends so (slashes ignored) */
static char *metrics_path(const char *path)
{
	size_t plen = strlen(path), slen = sizeof(suffix) - 1;
	char *np;

	while (plen && path[plen - 1] == '/')
		plen--;
	if (asprintf(&np, "%.*s%s", (int)plen, path,
		     plen >= slen && !memcmp(path + plen - slen, suffix, slen)
			     ? ""
			     : suffix) < 0)
		return NULL;
	return np;
}

int otlp_endpoint__resolve(const char *endpoint, bool exact, char **url,
			   char *err, size_t errlen)
{
	char *scheme = NULL, *host = NULL, *path = NULL, *full = NULL;
	char *np = NULL, *user = NULL;
	CURLU *u = NULL;
	int ret = -EINVAL;

	*url = NULL;
	if (!endpoint) {
		endpoint = getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
		exact = endpoint != NULL;
		if (!endpoint)
			endpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	}
	if (!endpoint || !*endpoint) {
		snprintf(err, errlen,
			 "OTLP endpoint is not set: configure "
			 "it or OTEL_EXPORTER_OTLP_ENDPOINT as "
			 "http://COLLECTOR:4318 or https://COLLECTOR:4318");
		return -EINVAL;
	}
	u = curl_url();
	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, endpoint,
			 CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		snprintf(err, errlen,
			 "OTLP endpoint \"%s\" is not a URL: "
			 "write it as http://HOST:4318 or https://HOST:4318",
			 endpoint);
		goto cleanup;
	}
	if (strcasecmp(scheme, "http") && strcasecmp(scheme, "https")) {
		snprintf(err, errlen,
			 "OTLP endpoint \"%s\": scheme \"%s\" is "
			 "not supported; OTLP/HTTP needs http:// or https://",
			 endpoint, scheme);
		goto cleanup;
	}
	if (!*host) {
		snprintf(err, errlen, "OTLP endpoint \"%s\" has no host",
			 endpoint);
		goto cleanup;
	}
	/* The URL is logged; credentials belong in (redacted) headers. */
	if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK) {
		snprintf(err, errlen,
			 "OTLP endpoint has user:password@ in it; "
			 "pass credentials as headers instead "
			 "(OTEL_EXPORTER_OTLP_HEADERS=Authorization=...)");
		goto cleanup;
	}
	if (!exact) {
		if (curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
			goto cleanup;
		np = metrics_path(path);
		if (!np) {
			ret = -ENOMEM;
			goto cleanup;
		}
		if (curl_url_set(u, CURLUPART_PATH, np, 0) != CURLUE_OK)
			goto cleanup;
	}
	if (curl_url_get(u, CURLUPART_URL, &full, 0) != CURLUE_OK)
		goto cleanup;
	*url = strdup(full);
	ret = *url ? 0 : -ENOMEM;
cleanup:
	free(np);
	curl_free(scheme);
	curl_free(user);
	curl_free(host);
	curl_free(path);
	curl_free(full);
	curl_url_cleanup(u);
	return ret;
}
