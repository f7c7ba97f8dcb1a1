// SPDX-License-Identifier: Apache-2.0
/*
 * The Service of a Gateway's proxy (v1 Service, from the API or the
 * manifests): which container port (targetPort) serves each listener port
 * (port). Envoy Gateway's proxy Service maps port 80 to targetPort 10080;
 * the proxy's accepted sockets carry the targetPort, which is how the
 * agent tells the listener of a connection (docs/listeners.md).
 *
 * A Service names its Gateway by the labels proxy pods carry
 * (agent/proxy_pods.c): gateway.networking.k8s.io/gateway-name (the
 * Service's namespace), or Envoy Gateway's
 * gateway.envoyproxy.io/owning-gateway-name and -namespace. Any other
 * Service is skipped, as the other kinds milometer does not read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/gateway/gateway_api.h"
#include "policy/gateway/gateway_api_fields.h"

static const char *label(const struct doc_node *labels, const char *key)
{
	const struct doc_node *v = doc__get(labels, key);

	return v && v->kind == DOC_STRING && v->str.s[0] ? v->str.s : NULL;
}

int gateway_svc__add(struct gw_ctx *c, const struct doc_node *root)
{
	const struct doc_node *md = doc__get(root, "metadata");
	const struct doc_node *labels = md ? doc__get(md, "labels") : NULL;
	const struct doc_node *spec, *ports = NULL;
	struct gw_service *s, **grown;
	const char *gw = NULL, *gw_ns = NULL;
	int err;

	if (labels && labels->kind == DOC_MAP) {
		gw = label(labels, "gateway.networking.k8s.io/gateway-name");
		if (!gw) {
			gw = label(labels,
				   "gateway.envoyproxy.io/owning-gateway-name");
			gw_ns = label(labels, "gateway.envoyproxy.io/"
					      "owning-gateway-namespace");
			if (!gw_ns)
				gw = NULL;
		}
	}
	if (!gw) {
		c->m->skipped++;
		return 0;
	}
	s = gateway_api_fields__alloc(c->m, sizeof(*s));
	if (!s)
		return gateway_api_fields__oom(c);
	err = gateway_api_fields__metadata(c, root, "Service", &s->ns,
					   &s->name);
	if (!err)
		err = gateway_api_fields__opt_map(c, root, "spec", "Service",
						  &spec);
	if (!err && spec)
		err = gateway_api_fields__opt_list(c, spec, "ports",
						   "Service.spec", &ports);
	if (!err && ports)
		err = gateway_api_fields__max_items(c, ports, GW_MAX_LISTENERS,
						    "Service.spec.ports");
	if (err)
		return err;
	s->gw_name = gateway_api_fields__strdup(c->m, gw);
	s->gw_ns = gateway_api_fields__strdup(c->m, gw_ns ? gw_ns : s->ns);
	s->ports = gateway_api_fields__array(
		c->m, ports ? ports->list.n + 1 : 1, sizeof(*s->ports));
	if (!s->gw_name || !s->gw_ns || !s->ports)
		return gateway_api_fields__oom(c);
	for (size_t i = 0; ports && i < ports->list.n; i++) {
		const struct doc_node *p = ports->list.items[i];
		const struct doc_node *tp;
		uint32_t port = 0;

		err = gateway_api_fields__item_map(c, p, "Service.spec.ports",
						   i);
		if (!err)
			err = gateway_api_fields__opt_port(
				c, p, "port", "Service.spec.ports[]", &port);
		if (err)
			return err;
		if (!port)
			continue;
		tp = doc__get(p, "targetPort");
		/* absent: the port itself, as the API server defaults it */
		if (!tp || tp->kind == DOC_NULL) {
			s->ports[s->nports].port = port;
			s->ports[s->nports++].target = port;
			continue;
		}
		/* a named container port: the pod's spec would say; unknown */
		if (tp->kind == DOC_STRING)
			continue;
		err = gateway_api_fields__opt_port(c, p, "targetPort",
						   "Service.spec.ports[]",
						   &s->ports[s->nports].target);
		if (err)
			return err;
		s->ports[s->nports++].port = port;
	}
	grown = realloc(c->m->services, (c->m->nservices + 1) * sizeof(*grown));
	if (!grown)
		return gateway_api_fields__oom(c);
	c->m->services = grown;
	grown[c->m->nservices++] = s;
	return 0;
}

uint32_t gateway_api__target_port(const struct gw_model *m,
				  const struct gw_gateway *g, uint32_t port)
{
	for (size_t i = 0; i < m->nservices; i++) {
		const struct gw_service *s = m->services[i];

		if (strcmp(s->gw_ns, g->ns) || strcmp(s->gw_name, g->name))
			continue;
		for (size_t k = 0; k < s->nports; k++)
			if (s->ports[k].port == port)
				return s->ports[k].target;
	}
	return 0;
}
