// SPDX-License-Identifier: Apache-2.0
/* `milometer explain`: its flags; the answer is policy/gateway/explain.c's. */
#include <getopt.h>
#include <stdio.h>

#define LOG_MODULE "explain"
#include "agent/cmd/cmd.h"
#include "policy/gateway/explain.h"
#include "policy/gateway/route_match.h"
#include "policy/util/log.h"

static const char usage[] =
	"usage: milometer explain --manifests PATH [--gateway NS/NAME]\n"
	"                         [--listener NAME] [-X METHOD]\n"
	"                         [-H 'Name: value']... URL\n"
	"\n"
	"Print the HTTPRoute rule a request is attributed to\n"
	"(\"NAMESPACE/NAME rule N\" or \"unmatched\") and the Gateway API\n"
	"precedence step that decided it.\n"
	"\n"
	"  --manifests PATH  a manifest file, or every *.yaml / *.yml under a\n"
	"                    directory (Gateways, HTTPRoutes, Namespaces;\n"
	"                    other kinds are ignored)\n"
	"  --gateway NS/NAME only routes attached to this Gateway (default:\n"
	"                    all Gateways merged)\n"
	"  --listener NAME   the Gateway listener that accepted the request\n"
	"                    (default: the one on the URL's port, 80 for\n"
	"                    http://, 443 for https://, that takes its host)\n"
	"  -X METHOD         request method (default GET)\n"
	"  -H 'Name: value'  request header; 'Host: h' overrides the URL host\n"
	"  -v                also print the vhost's precedence list\n"
	"  URL               http://host[:port]/path?query, or /path?query\n"
	"                    with -H 'Host: ...'\n"
	"\n"
	"Exit status: 0 with an answer (matched or not), 2 for bad input.\n";

int explain__run(int argc, char **argv, FILE *out, FILE *errs)
{
	static const struct option opts[] = {
		{ "manifests", required_argument, NULL, 'm' },
		{ "gateway", required_argument, NULL, 'g' },
		{ "listener", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct explain_opts o = { .method = "GET" };
	struct http_req req = { 0 };
	int c;

	optind = 0; /* getopt state is global: the agent may have used it */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "X:H:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			o.manifests = optarg;
			break;
		case 'g':
			o.gateway = optarg;
			break;
		case 'l':
			o.listener = optarg;
			break;
		case 'X':
			o.method = optarg;
			break;
		case 'H':
			if (explain__add_header(&req, optarg, errs))
				return 2;
			break;
		case 'v':
			o.verbose = true;
			break;
		case 'h':
			fputs(usage, out);
			return 0;
		default:
			pr_err("unknown or incomplete option \"%s\"\n",
			       argv[optind - 1]);
			fputs(usage, errs);
			return 2;
		}
	}
	if (!o.manifests || optind != argc - 1) {
		pr_err("need --manifests PATH and exactly one URL\n");
		fputs(usage, errs);
		return 2;
	}
	return explain__request(&o, &req, argv[optind], out, errs);
}

int explain__main(int argc, char **argv)
{
	return explain__run(argc, argv, stdout, stderr);
}
