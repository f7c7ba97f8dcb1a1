/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the API server is and who we are, found the way client-go does:
 * an explicit kubeconfig (--kubeconfig, else $KUBECONFIG's first file),
 * else in-cluster (KUBERNETES_SERVICE_HOST/PORT, the service-account token
 * and CA under /var/run/secrets/kubernetes.io/serviceaccount), else
 * ~/.kube/config. From a kubeconfig: the current context's server,
 * certificate-authority(-data), token(-file), client-certificate/key(-data).
 * Exec and auth-provider plugins are not supported (named in the error).
 *
 * A token file is re-read every minute and after a 401 (client-go's
 * cached file token source): kubelet rotates projected tokens.
 */
#ifndef MM_AGENT_K8S_CONFIG_H
#define MM_AGENT_K8S_CONFIG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define K8S_SA_DIR          "/var/run/secrets/kubernetes.io/serviceaccount"
#define K8S_TOKEN_REREAD_NS (60ULL * 1000000000ULL)

struct k8s_config {
	char *server; /* https://host:port, no trailing slash */
	char *ca_file;
	char *ca_pem; /* certificate-authority-data, decoded */
	size_t ca_pem_len;
	char *cert_file, *key_file;
	char *cert_pem, *key_pem; /* client-certificate-data / key-data */
	size_t cert_pem_len, key_pem_len;
	bool insecure; /* insecure-skip-tls-verify */
	char *token_file;
	char *origin; /* "in-cluster" or the kubeconfig path */
	/* the bearer token: fixed, or read from token_file */
	pthread_mutex_t lock;
	char *token;
	uint64_t token_read_ns; /* CLOCK_MONOTONIC of the last read */
	uint64_t token_reads;
};

/*
 * kubeconfig NULL: $KUBECONFIG, in-cluster, ~/.kube/config in that order.
 * -errno with what to fix in err.
 */
int k8s_config__load(const char *kubeconfig, struct k8s_config **out, char *err,
		     size_t errlen);
void k8s_config__free(struct k8s_config *c);
/*
 * The current bearer token into buf ("" when none). Re-reads token_file
 * when force is set (after a 401) or the last read is a minute old.
 */
void k8s_config__token(struct k8s_config *c, bool force, char *buf, size_t len);

#endif /* MM_AGENT_K8S_CONFIG_H */
