// SPDX-License-Identifier: Apache-2.0
/*
 * gen_nginx --manifests DIR --listen ADDR:PORT --upstream NAME=HOST:PORT...
 *           --log FILE [--gateway NS/NAME] [-o nginx.conf]
 *
 * An nginx.conf that routes like the HTTPRoutes in DIR (route order from
 * the compiled route table, see selftests/tools/lib/route_nginx.h) and logs each
 * request's Gateway API route for the integration tests.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/gateway/gateway_api.h"
#include "policy/gateway/route_compile.h"
#include "selftests/tools/lib/route_nginx.h"

static const char usage[] =
	"usage: gen_nginx --manifests DIR --listen ADDR:PORT --log FILE\n"
	"                 [--upstream NAME=HOST:PORT]... [--gateway NS/NAME]\n"
	"                 [-o FILE]\n"
	"\n"
	"  --upstream NAME=HOST:PORT  where backendRef Service NAME (or NS/NAME)\n"
	"                             listens; one per Service referenced\n"
	"  -o FILE                    write there instead of stdout\n"
	"Run the result with: nginx -p DIR -e DIR/error.log -c DIR/nginx.conf\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "manifests", required_argument, NULL, 'm' },
		{ "listen", required_argument, NULL, 'l' },
		{ "upstream", required_argument, NULL, 'u' },
		{ "log", required_argument, NULL, 'L' },
		{ "gateway", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct route_nginx_upstream *ups = calloc(argc, sizeof(*ups));
	struct route_nginx_opts o = { .upstreams = ups };
	const char *dir = NULL, *gateway = NULL, *outp = NULL;
	struct route_table *t = NULL;
	struct gw_model *m = NULL;
	FILE *out = stdout;
	char err[512];
	int c, ret = 2;

	if (!ups)
		return 2;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		char *eq;

		switch (c) {
		case 'm':
			dir = optarg;
			break;
		case 'l':
			o.listen = optarg;
			break;
		case 'L':
			o.log_path = optarg;
			break;
		case 'g':
			gateway = optarg;
			break;
		case 'o':
			outp = optarg;
			break;
		case 'u':
			eq = strchr(optarg, '=');
			if (!eq || eq == optarg || !strchr(eq, ':')) {
				fprintf(stderr,
					"gen_nginx: --upstream \"%s\": "
					"write NAME=HOST:PORT\n",
					optarg);
				goto cleanup;
			}
			*eq = '\0';
			ups[o.nupstreams].name = optarg;
			ups[o.nupstreams++].addr = eq + 1;
			break;
		case 'h':
			fputs(usage, stdout);
			ret = 0;
			goto cleanup;
		default:
			fputs(usage, stderr);
			goto cleanup;
		}
	}
	if (!dir || !o.listen || !o.log_path || optind != argc) {
		fprintf(stderr,
			"gen_nginx: need --manifests, --listen and "
			"--log\n%s",
			usage);
		goto cleanup;
	}
	m = gateway_api__new();
	if (!m || gateway_api__load_dir(m, dir, err, sizeof(err)) ||
	    route_compile__build(m, gateway, 1, &t, err, sizeof(err))) {
		fprintf(stderr, "gen_nginx: %s\n", m ? err : "out of memory");
		goto cleanup;
	}
	if (outp && !(out = fopen(outp, "w"))) {
		fprintf(stderr, "gen_nginx: %s: %s\n", outp, strerror(errno));
		out = stdout;
		goto cleanup;
	}
	if (route_nginx__write(t, &o, out, err, sizeof(err))) {
		fprintf(stderr, "gen_nginx: %s\n", err);
		goto cleanup;
	}
	ret = 0;
cleanup:
	if (out != stdout && fclose(out) && !ret) {
		fprintf(stderr, "gen_nginx: %s: %s\n", outp, strerror(errno));
		ret = 2;
	}
	route_compile__free(t);
	gateway_api__free(m);
	free(ups);
	return ret;
}
