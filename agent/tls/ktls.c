// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/tls/ktls.h"

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

int ktls__probe(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int l = -1, c = -1, a = -1, ret;

	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(l, 1) || getsockname(l, (struct sockaddr *)&sa, &sl) ||
	    connect(c, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		goto cleanup;
	}
	a = accept(l, NULL, NULL);
	/* the ULP needs an established socket, as after a TLS handshake */
	if (setsockopt(c, SOL_TCP, TCP_ULP, "tls", sizeof("tls")) == 0)
		ret = 1;
	else
		ret = errno == ENOENT ? 0 : -errno;
cleanup:
	if (a >= 0)
		close(a);
	if (c >= 0)
		close(c);
	if (l >= 0)
		close(l);
	return ret;
}
