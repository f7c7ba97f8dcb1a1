/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kernel TLS (kTLS): after the handshake OpenSSL can hand the record layer
 * to the kernel (nginx `ssl_conf_command Options KTLS`), and then the socket
 * syscalls carry plaintext and SSL_write may be bypassed (SSL_sendfile).
 * Whether this kernel can do it at all is one question docs/tls-http2.md and
 * `milometer ctl` answer: the "tls" upper-layer protocol must be registered
 * (CONFIG_TLS); the 6.18 test kernel has none.
 */
#ifndef MM_AGENT_TLS_KTLS_H
#define MM_AGENT_TLS_KTLS_H

/*
 * 1: the kernel accepts TCP_ULP "tls" on a connected TCP socket (kTLS
 * possible); 0: it does not (ENOENT: no CONFIG_TLS or module); negative
 * errno when the probe itself failed. Uses a loopback socket pair on an
 * ephemeral port; may load the tls module as the kernel would for nginx.
 */
int ktls__probe(void);

#endif /* MM_AGENT_TLS_KTLS_H */
