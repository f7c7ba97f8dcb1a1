#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# --listener-port: the Gateway's listeners are on 80 and 443 (as a client
# sees them) and nginx accepts them on other socket ports, as a proxy
# behind a Service's targetPort does. Mapped, every request is attributed
# within its listener's routes (counts equal nginx's log on both legs);
# unmapped, the socket ports are no listener's and the redirects would
# land on t/app.
. "$(dirname "$0")/lib.sh"
. "$IT_DIR/listeners.sh"
need_root
need_bin milometer
use_manifests listeners
sed -i -e "s/port: $HTTP_SOCK\$/port: 80/" -e "s/port: $WEB_SOCK\$/port: 443/" \
	-e "s/port: $WEB_SOCK}/port: 443}/" "$T/manifests/shop.yaml"
grep -q "port: 443}" "$T/manifests/shop.yaml" ||
	fail "manifests/listeners changed: the port rewrite no longer applies"
got=$(explain "https://shop.example.com/cart")
[ "$got" = "t/app rule 1" ] || fail "explain https:// gives $got"
got=$(explain "http://shop.example.com/cart")
[ "$got" = "t/redirect rule 0" ] || fail "explain http:// gives $got"
start_backends
start_agent --listener-port "80=$HTTP_SOCK" --listener-port "443=$WEB_SOCK"
grep -q "socket port $HTTP_SOCK serves listener port 80" "$T/agent.out" &&
	grep -q "socket port $WEB_SOCK serves listener port 443" "$T/agent.out" ||
	fail "the agent did not map the listener ports: $(tail -5 "$T/agent.out")"
listeners_nginx
listeners_traffic
