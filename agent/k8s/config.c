// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "agent/k8s/config.h"
#include "policy/source/doc.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void k8s_config__free(struct k8s_config *c)
{
	if (!c)
		return;
	free(c->server);
	free(c->ca_file);
	free(c->ca_pem);
	free(c->cert_file);
	free(c->key_file);
	free(c->cert_pem);
	free(c->key_pem);
	free(c->token_file);
	free(c->origin);
	free(c->token);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static char *read_small_file(const char *path, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return NULL;
	buf = malloc(1 << 16);
	if (buf) {
		n = fread(buf, 1, (1 << 16) - 1, f);
		buf[n] = 0;
	}
	fclose(f);
	if (len)
		*len = n;
	return buf;
}

static void trim(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		s[--n] = 0;
}

/* base64 (kubeconfig *-data fields) to bytes, NUL-terminated */
static char *b64_decode(const char *in, size_t *outlen)
{
	size_t n = strlen(in), pad = 0;
	unsigned char *out;
	int r;

	out = malloc(n / 4 * 3 + 4);
	if (!out)
		return NULL;
	r = EVP_DecodeBlock(out, (const unsigned char *)in, (int)n);
	if (r < 0) {
		free(out);
		return NULL;
	}
	/* EVP_DecodeBlock counts the padding as zero bytes */
	while (n && in[n - 1] == '=') {
		pad++;
		n--;
	}
	*outlen = r - pad;
	out[*outlen] = 0;
	return (char *)out;
}

static struct k8s_config *config_new(void)
{
	struct k8s_config *c = calloc(1, sizeof(*c));

	if (c)
		pthread_mutex_init(&c->lock, NULL);
	return c;
}

static int in_cluster(struct k8s_config **out, char *err, size_t errlen)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	const char *dir = getenv("MILOMETER_SA_DIR"); /* tests only */
	struct k8s_config *c;

	if (!dir)
		dir = K8S_SA_DIR;
	c = config_new();
	if (!c)
		return -ENOMEM;
	/* an IPv6 service host needs brackets in the URL */
	if (asprintf(&c->server,
		     strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s",
		     host, port) < 0 ||
	    asprintf(&c->token_file, "%s/token", dir) < 0 ||
	    asprintf(&c->ca_file, "%s/ca.crt", dir) < 0 ||
	    !(c->origin = strdup("in-cluster"))) {
		k8s_config__free(c);
		return -ENOMEM;
	}
	if (access(c->token_file, R_OK)) {
		snprintf(
			err, errlen,
			"in-cluster: cannot read the service-account token %s: %s (is automountServiceAccountToken off?)",
			c->token_file, strerror(errno));
		k8s_config__free(c);
		return -ENOENT;
	}
	*out = c;
	return 0;
}

static const struct doc_node *named(const struct doc_node *root,
				    const char *list, const char *name)
{
	const struct doc_node *l = doc__get(root, list);

	if (!l || l->kind != DOC_LIST || !name)
		return NULL;
	for (size_t i = 0; i < l->list.n; i++) {
		const char *n = doc__str(l->list.items[i], "name");

		if (n && !strcmp(n, name))
			return l->list.items[i];
	}
	return NULL;
}

/* A relative path in a kubeconfig is relative to the kubeconfig's dir. */
static char *kc_path(const char *kubeconfig, const char *p)
{
	const char *slash = strrchr(kubeconfig, '/');
	char *out;

	if (p[0] == '/' || !slash)
		return strdup(p);
	if (asprintf(&out, "%.*s/%s", (int)(slash - kubeconfig), kubeconfig,
		     p) < 0)
		return NULL;
	return out;
}

static int kc_data(const struct doc_node *n, const char *key, char **out,
		   size_t *len, char *err, size_t errlen)
{
	const char *v = doc__str(n, key);

	if (!v)
		return 0;
	*out = b64_decode(v, len);
	if (!*out) {
		snprintf(err, errlen, "kubeconfig: %s is not valid base64",
			 key);
		return -EINVAL;
	}
	return 0;
}

static int kubeconfig(const char *path, struct k8s_config **out, char *err,
		      size_t errlen)
{
	const struct doc_node *root, *ctx, *cl, *us, *x;
	struct doc_file *f = NULL;
	struct k8s_config *c = NULL;
	const char *cur, *v;
	char perr[512];
	int ret;

	ret = doc__parse_file(path, &f, perr, sizeof(perr));
	if (ret) {
		snprintf(err, errlen, "kubeconfig %s", perr);
		return ret;
	}
	root = f->ndocs ? f->docs[0] : NULL;
	cur = doc__str(root, "current-context");
	ctx = named(root, "contexts", cur);
	if (!cur || !ctx) {
		snprintf(
			err, errlen,
			"kubeconfig %s: current-context %s%s%s not found under contexts",
			path, cur ? "\"" : "", cur ? cur : "(unset)",
			cur ? "\"" : "");
		ret = -EINVAL;
		goto cleanup;
	}
	cl = named(root, "clusters", doc__str(ctx, "context.cluster"));
	us = named(root, "users", doc__str(ctx, "context.user"));
	x = doc__get(cl, "cluster");
	if (!x || !(v = doc__str(x, "server"))) {
		snprintf(
			err, errlen,
			"kubeconfig %s: context \"%s\" names no cluster with a server",
			path, cur);
		ret = -EINVAL;
		goto cleanup;
	}
	c = config_new();
	if (!c || !(c->server = strdup(v)) || !(c->origin = strdup(path))) {
		ret = -ENOMEM;
		goto cleanup;
	}
	trim(c->server);
	if (c->server[strlen(c->server) - 1] == '/')
		c->server[strlen(c->server) - 1] = 0;
	if ((v = doc__str(x, "certificate-authority")))
		c->ca_file = kc_path(path, v);
	ret = kc_data(x, "certificate-authority-data", &c->ca_pem,
		      &c->ca_pem_len, err, errlen);
	if (ret)
		goto cleanup;
	{
		const struct doc_node *ins =
			doc__get(x, "insecure-skip-tls-verify");

		c->insecure = ins && ins->kind == DOC_BOOL && ins->b;
	}
	x = doc__get(us, "user");
	if (x) {
		if (doc__get(x, "exec") || doc__get(x, "auth-provider")) {
			snprintf(
				err, errlen,
				"kubeconfig %s: user \"%s\" uses an exec/auth-provider plugin, which milometer does not run; use a token, token file or client certificate",
				path, doc__str(us, "name"));
			ret = -ENOTSUP;
			goto cleanup;
		}
		if ((v = doc__str(x, "token")) && !(c->token = strdup(v))) {
			ret = -ENOMEM;
			goto cleanup;
		}
		if ((v = doc__str(x, "tokenFile")))
			c->token_file = kc_path(path, v);
		if ((v = doc__str(x, "client-certificate")))
			c->cert_file = kc_path(path, v);
		if ((v = doc__str(x, "client-key")))
			c->key_file = kc_path(path, v);
		ret = kc_data(x, "client-certificate-data", &c->cert_pem,
			      &c->cert_pem_len, err, errlen);
		if (!ret)
			ret = kc_data(x, "client-key-data", &c->key_pem,
				      &c->key_pem_len, err, errlen);
		if (ret)
			goto cleanup;
	}
	*out = c;
	c = NULL;
cleanup:
	k8s_config__free(c);
	doc__free_file(f);
	return ret;
}

int k8s_config__load(const char *path, struct k8s_config **out, char *err,
		     size_t errlen)
{
	const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
	char buf[4096];

	*out = NULL;
	if (path)
		return kubeconfig(path, out, err, errlen);
	if (env && env[0]) {
		/* client-go merges the list; we take the first file */
		snprintf(buf, sizeof(buf), "%.*s", (int)strcspn(env, ":"), env);
		return kubeconfig(buf, out, err, errlen);
	}
	if (getenv("KUBERNETES_SERVICE_HOST") &&
	    getenv("KUBERNETES_SERVICE_PORT"))
		return in_cluster(out, err, errlen);
	if (home) {
		snprintf(buf, sizeof(buf), "%s/.kube/config", home);
		if (!access(buf, R_OK))
			return kubeconfig(buf, out, err, errlen);
	}
	snprintf(
		err, errlen,
		"no Kubernetes API configured: not in a cluster (KUBERNETES_SERVICE_HOST unset), no --kubeconfig, $KUBECONFIG or ~/.kube/config; use --manifests DIR to run without a cluster");
	return -ENOENT;
}

void k8s_config__token(struct k8s_config *c, bool force, char *buf, size_t len)
{
	uint64_t now = mono_ns();

	pthread_mutex_lock(&c->lock);
	if (c->token_file && (force || !c->token_read_ns ||
			      now - c->token_read_ns >= K8S_TOKEN_REREAD_NS)) {
		char *t = read_small_file(c->token_file, NULL);

		/* a failed read keeps the last token: kubelet swaps atomically */
		if (t) {
			trim(t);
			free(c->token);
			c->token = t;
		}
		c->token_read_ns = now;
		c->token_reads++;
	}
	snprintf(buf, len, "%s", c->token ? c->token : "");
	pthread_mutex_unlock(&c->lock);
}
