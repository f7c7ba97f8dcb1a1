// SPDX-License-Identifier: Apache-2.0
/*
 * A TLS HTTP/1.1 server linked statically against OpenSSL (libssl.a), for
 * TLS capture of a proxy whose TLS library is in its own executable (Envoy
 * built with symbols). One connection at a time, keep-alive, every request
 * answered 200 with a short body; one access-log line per request on
 * stdout: "Host<TAB>path".
 *
 *   server PORT CERT KEY
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* Serve one connection until the client closes it. */
static void serve(SSL *s)
{
	char buf[8192], host[256], path[1024];
	size_t have = 0;

	for (;;) {
		char *end = have ? memmem(buf, have, "\r\n\r\n", 4) : NULL;
		int n;

		if (!end) {
			if (have == sizeof(buf))
				return;
			n = SSL_read(s, buf + have, sizeof(buf) - have);
			if (n <= 0)
				return;
			have += n;
			continue;
		}
		*end = 0;
		host[0] = path[0] = 0;
		sscanf(buf, "%*s %1023s", path);
		for (char *h = strstr(buf, "\r\n"); h;
		     h = strstr(h + 2, "\r\n"))
			if (!strncasecmp(h + 2, "host:", 5))
				sscanf(h + 7, " %255[^\r]", host);
		printf("%s\t%s\n", host, path);
		fflush(stdout);
		static const char resp[] =
			"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"
			"Content-Type: text/plain\r\n\r\nok\n";
		if (SSL_write(s, resp, sizeof(resp) - 1) <= 0)
			return;
		n = end + 4 - buf;
		memmove(buf, buf + n, have - n);
		have -= n;
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	SSL_CTX *ctx;
	int l, one = 1;

	if (argc != 4)
		return 2;
	ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx ||
	    SSL_CTX_use_certificate_file(ctx, argv[2], SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, argv[3], SSL_FILETYPE_PEM) != 1)
		return 1;
	a.sin_port = htons(atoi(argv[1]));
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 64))
		return 1;
	for (;;) {
		int c = accept(l, NULL, NULL);
		SSL *s;

		if (c < 0)
			continue;
		s = SSL_new(ctx);
		SSL_set_fd(s, c);
		if (SSL_accept(s) == 1)
			serve(s);
		SSL_free(s);
		close(c);
	}
}
