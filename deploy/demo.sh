#!/usr/bin/env bash
# make demo: a real nginx gateway on loopback, configured from the example
# HTTPRoutes, a backend, the agent attached to the gateway with the example
# MetricDefinitions/MetricPolicies, some traffic, then the per-route metrics.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/bin
[ "$(id -u)" = 0 ] || { echo "make demo needs root (it loads BPF programs)"; exit 1; }
work=$(mktemp -d /tmp/milometer-demo.XXXXXX)
gw_port=${DEMO_GW_PORT:-18480}
be_port=${DEMO_BE_PORT:-18481}
prom=127.0.0.1:${DEMO_PROM_PORT:-18464}
agent_pid=""
cleanup() {
	[ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null || true
	for d in gw be; do
		[ -f "$work/$d/nginx.pid" ] && kill "$(cat "$work/$d/nginx.pid")" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

for p in $gw_port $be_port ${prom#*:}; do
	if (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then
		echo "port $p is in use; set DEMO_GW_PORT/DEMO_BE_PORT/DEMO_PROM_PORT"; exit 1
	fi
done

echo "== manifests: Gateway, HTTPRoutes, ClusterProperties, MetricDefinitions, MetricPolicies"
mkdir -p "$work/manifests" "$work/gw/tmp" "$work/be"
cp "$top"/deploy/examples/*.yaml "$work/manifests/"
cp "$top"/deploy/examples/contract/seed-scenario-*.yaml "$top"/deploy/examples/contract/extra-*.yaml "$work/manifests/"
ls "$work/manifests" | sed 's/^/   /'

echo "== backend nginx on 127.0.0.1:$be_port"
cat > "$work/be/nginx.conf" <<CONF
worker_processes 1; pid $work/be/nginx.pid; error_log $work/be/error.log;
events {}
http { access_log off;
  server { listen 127.0.0.1:$be_port;
    location / { return 200 "ok \$uri\n"; }
    location /checkout/fail { return 503 "unavailable\n"; }
    location /catalog/missing { return 404 "no such item\n"; } } }
CONF
nginx -p "$work/be" -e "$work/be/error.log" -c "$work/be/nginx.conf"

echo "== gateway nginx on 127.0.0.1:$gw_port, config generated from the HTTPRoutes"
up=()
for s in checkout cart catalog orders canary; do up+=(--upstream "$s=127.0.0.1:$be_port"); done
"$bin/gen_nginx" --manifests "$work/manifests" --listen "127.0.0.1:$gw_port" \
	--log "$work/gw/access.log" "${up[@]}" -o "$work/gw/nginx.conf"
nginx -p "$work/gw" -e "$work/gw/error.log" -c "$work/gw/nginx.conf"
for _ in $(seq 50); do [ -s "$work/gw/nginx.pid" ] && break; sleep 0.1; done

echo "== milometer run (traces the gateway's master and workers only)"
"$bin/milometer" run --manifests "$work/manifests" --gateway demo/edge \
	--proxy-pid "$(cat "$work/gw/nginx.pid")" --prometheus-listen "$prom" \
	--socket "$work/milometer.sock" 2> "$work/agent.log" &
agent_pid=$!
for _ in $(seq 100); do
	curl -sf "http://$prom/readyz" >/dev/null 2>&1 && break
	kill -0 $agent_pid 2>/dev/null || { cat "$work/agent.log"; exit 1; }
	sleep 0.1
done
sed 's/^/   /' "$work/agent.log"

echo "== traffic"
req() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
n=0
for i in $(seq 40); do
	req -H 'Host: shop.example.com' "http://127.0.0.1:$gw_port/checkout/pay" >/dev/null
	req -H 'Host: shop.example.com' "http://127.0.0.1:$gw_port/catalog/item/$i" >/dev/null
	n=$((n + 2))
done
for i in $(seq 10); do
	req -H 'Host: shop.example.com' "http://127.0.0.1:$gw_port/checkout/fail" >/dev/null
	req -H 'Host: shop.example.com' "http://127.0.0.1:$gw_port/catalog/missing" >/dev/null
	req -X POST -d '{}' -H 'Host: eu.api.example.com' "http://127.0.0.1:$gw_port/v1/orders" >/dev/null
	req -H 'Host: eu.api.example.com' -H 'X-Canary: true' "http://127.0.0.1:$gw_port/v1/items" >/dev/null
	req -H 'Host: www.example.net' "http://127.0.0.1:$gw_port/" >/dev/null
	n=$((n + 5))
done
if command -v wrk >/dev/null; then
	wrk -t1 -c4 -d2s -H 'Host: shop.example.com' "http://127.0.0.1:$gw_port/cart/view" | sed -n 's/^/   /; /requests in/p'
fi
echo "   $n scripted requests plus wrk's"

# wait until the agent has counted every line the gateway logged
logged() { wc -l < "$work/gw/access.log"; }
counted() {
	curl -s "http://$prom/metrics" | awk '/^envoy_http_downstream_rq_total/ {s += $NF} END {print s + 0}'
}
for _ in $(seq 50); do [ "$(counted)" -ge "$(logged)" ] && break; sleep 0.1; done

echo
echo "== per-route downstream requests (agent) vs the gateway's access log"
curl -s "http://$prom/metrics" | python3 "$top/deploy/demo_table.py" "$work/gw/access.log"
echo
echo "== target metrics produced by the MetricPolicies (Prometheus names)"
curl -s "http://$prom/metrics" | grep -E '^gateway_networking_k8s_io_httproute_' | grep -v '_bucket{' | sed 's/^/   /' | head -30
echo
echo "== policies and their conditions (milometer ctl policies)"
"$bin/milometer" ctl --socket "$work/milometer.sock" policies | sed 's/^/   /' | head -40
echo
echo "demo done: agent, nginx and temp files are cleaned up on exit"
