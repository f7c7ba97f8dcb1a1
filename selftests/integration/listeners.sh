# SPDX-License-Identifier: Apache-2.0
# Sourced by test_listeners_*.sh after lib.sh: one proxy serving the two
# listeners of manifests/listeners (the HTTP -> HTTPS redirect Gateway) on
# two socket ports, each proxy configured by hand to route as the Gateway
# API says and to log the route it chose. Ground truth is the proxy's log.

HTTP_SOCK=$PROXY_PORT                        # listener http's socket
WEB_SOCK=${MM_IT_PROXY_PORT2:-28085}         # listener web's socket

# listeners_nginx: mm-it-nginx, 2 workers, upstream keep-alive shared by
# both listeners' servers (the upstream leg must keep each request's route).
listeners_nginx() {
	port_free "$HTTP_SOCK"
	port_free "$WEB_SOCK"
	mkdir -p "$NGINX_DIR/tmp"
	cat >"$NGINX_DIR/nginx.conf" <<-EOF
		user root;
		worker_processes 2;
		pid nginx.pid;
		events { worker_connections 1024; }
		http {
		    log_format mm escape=none "\$route\t\$status\t\$request_time\t\$upstream_response_time\t\$upstream_status\t\$request_method\t\$host\t\$request_uri\t\$connection\t\$connection_requests\t\$upstream_connect_time";
		    access_log $NGINX_LOG mm;
		    keepalive_requests 1000000;
		    client_body_temp_path tmp/body;
		    proxy_temp_path tmp/proxy;
		    fastcgi_temp_path tmp/fastcgi;
		    uwsgi_temp_path tmp/uwsgi;
		    scgi_temp_path tmp/scgi;
		    proxy_http_version 1.1;
		    proxy_set_header Connection "";
		    proxy_set_header Host \$http_host;
		    upstream py { server 127.0.0.1:$PY_PORT; keepalive 16; }
		    upstream static { server 127.0.0.1:$STATIC_PORT; keepalive 16; }
		    # listener http: t/redirect takes shop.example.com, nothing else
		    server {
		        listen 127.0.0.1:$HTTP_SOCK default_server;
		        server_name _;
		        set \$route "unmatched";
		        return 404;
		    }
		    server {
		        listen 127.0.0.1:$HTTP_SOCK;
		        server_name shop.example.com;
		        set \$route "t/redirect rule 0";
		        return 301 https://\$host\$request_uri;
		    }
		    # listener web: t/app for shop.example.com, t/api (by port)
		    server {
		        listen 127.0.0.1:$WEB_SOCK default_server;
		        server_name _;
		        set \$route "unmatched";
		        return 404;
		    }
		    server {
		        listen 127.0.0.1:$WEB_SOCK;
		        server_name shop.example.com;
		        set \$route "t/app rule 1";
		        location / { proxy_pass http://py; }
		        location = /static { set \$route "t/app rule 0"; proxy_pass http://static; }
		        location /static/ { set \$route "t/app rule 0"; proxy_pass http://static; }
		    }
		    server {
		        listen 127.0.0.1:$WEB_SOCK;
		        server_name api.example.com;
		        set \$route "t/api rule 0";
		        location / { proxy_pass http://py; }
		    }
		}
	EOF
	/usr/sbin/nginx -t -q -p "$NGINX_DIR/" -e "$NGINX_DIR/error.log" \
		-c "$NGINX_DIR/nginx.conf" || fail "nginx.conf does not load"
	cp /usr/sbin/nginx "$NGINX"
	start_bg nginx "$NGINX" -p "$NGINX_DIR/" -e "$NGINX_DIR/error.log" \
		-c "$NGINX_DIR/nginx.conf" -g 'daemon off;'
	wait_for 10 listening "$HTTP_SOCK" && wait_for 10 listening "$WEB_SOCK" ||
		fail "nginx did not start: $(tail -5 "$T/nginx.out")"
	LISTENERS_LOG=$NGINX_LOG
	LISTENERS_FMT=nginx
}

# listeners_haproxy: mm-it-haproxy, one frontend per listener, one thread
# (its log is the ground truth: see test_haproxy_counts.sh); the redirect
# is answered in a backend named after its route, so the log names it.
listeners_haproxy() {
	port_free "$HTTP_SOCK"
	port_free "$WEB_SOCK"
	mkdir -p "$T/haproxy"
	cat >"$T/haproxy/haproxy.cfg" <<-EOF
		global
		    log stdout format raw local0
		    maxconn 4096
		    nbthread 1
		defaults
		    mode http
		    log global
		    option http-keep-alive
		    option dontlognull
		    no option splice-auto
		    timeout connect 5s
		    timeout client 30s
		    timeout server 30s
		    timeout http-keep-alive 30s
		    log-format "%b\t%s\t%ST\t%Ta\t%Tr\t%HM\t%[capture.req.hdr(0)]\t%HPO\t%tsc"
		frontend http
		    bind 127.0.0.1:$HTTP_SOCK
		    capture request header Host len 64
		    http-request set-var(txn.host) req.hdr(host),field(1,:),lower
		    use_backend r__t__redirect__0 if { var(txn.host) -m str shop.example.com }
		    default_backend unmatched
		frontend web
		    bind 127.0.0.1:$WEB_SOCK
		    capture request header Host len 64
		    http-request set-var(txn.host) req.hdr(host),field(1,:),lower
		    acl h_shop var(txn.host) -m str shop.example.com
		    acl h_api var(txn.host) -m str api.example.com
		    acl p_static path /static
		    acl p_static path_beg /static/
		    use_backend r__t__app__0 if h_shop p_static
		    use_backend r__t__app__1 if h_shop
		    use_backend r__t__api__0 if h_api
		    default_backend unmatched
		backend unmatched
		    http-request return status 404
		backend r__t__redirect__0
		    http-request redirect scheme https code 301
		backend r__t__app__0
		    server static 127.0.0.1:$STATIC_PORT
		backend r__t__app__1
		    server py 127.0.0.1:$PY_PORT
		backend r__t__api__0
		    server py 127.0.0.1:$PY_PORT
	EOF
	haproxy -c -q -f "$T/haproxy/haproxy.cfg" || fail "haproxy.cfg does not load"
	cp /usr/sbin/haproxy "$T/mm-it-haproxy"
	start_bg haproxy sh -c "exec '$T/mm-it-haproxy' -db -f '$T/haproxy/haproxy.cfg' >'$HA_LOG'"
	wait_for 10 listening "$HTTP_SOCK" && wait_for 10 listening "$WEB_SOCK" ||
		fail "haproxy did not start: $(cat "$T/haproxy.out")"
	LISTENERS_LOG=$HA_LOG
	LISTENERS_FMT=haproxy
}

# listeners_explain HTTP_PORT WEB_PORT: the compiler's answers per listener
# (URL ports are listener ports, as a client of the Gateway sees them).
listeners_explain() {
	local got
	got=$(explain "http://shop.example.com:$1/cart")
	[ "$got" = "t/redirect rule 0" ] || fail "explain on listener http: $got"
	got=$(explain "http://shop.example.com:$2/cart")
	[ "$got" = "t/app rule 1" ] || fail "explain on listener web: $got"
	got=$(explain "http://api.example.com:$1/v1")
	[ "$got" = "unmatched" ] || fail "explain t/api on listener http: $got"
}

# listeners_traffic: both listeners, the same hostname on both; requests
# the proxy answers itself (redirects, 404s) and proxied ones, keep-alive
# and not, then the per-route counts of both legs against the log.
listeners_traffic() {
	local h=127.0.0.1:$HTTP_SOCK w=127.0.0.1:$WEB_SOCK out
	wrk -t1 -c4 -d2s -H "Host: shop.example.com" "http://$h/cart" >"$T/wrk-http.txt"
	wrk -t1 -c4 -d2s -H "Host: shop.example.com" "http://$w/cart" >"$T/wrk-web.txt"
	hey -n 300 -c 4 -disable-redirects -host shop.example.com "http://$h/static/a.css" >/dev/null
	hey -n 300 -c 4 -host shop.example.com "http://$w/static/a.css" >/dev/null
	hey -n 200 -c 4 -disable-keepalive -host shop.example.com "http://$w/" >/dev/null
	hey -n 200 -c 4 -disable-keepalive -disable-redirects -host shop.example.com "http://$h/" >/dev/null
	hey -n 200 -c 4 -host api.example.com "http://$w/v1/items" >/dev/null
	hey -n 100 -c 2 -host api.example.com "http://$h/v1/items" >/dev/null
	hey -n 50 -c 2 -host other.test "http://$h/" >/dev/null
	hey -n 50 -c 2 -host other.test "http://$w/" >/dev/null
	out=$(client send "$w" --pipeline --count 20 --host shop.example.com --path /cart)
	case "$out" in "responses 20 "*) ;; *) fail "pipelined: $out" ;; esac
	out=$(client send "$h" --pipeline --count 20 --host shop.example.com --path /cart)
	case "$out" in "responses 20 "*) ;; *) fail "pipelined redirects: $out" ;; esac
	# the redirects are in the log under their own route, with 301
	[ "$($PY "$IT_DIR/mmcheck.py" logcount --log "$LISTENERS_LOG" \
		--format "$LISTENERS_FMT" t/redirect)" -ge 500 ] ||
		fail "the proxy logged too few redirects: the test did not run as meant"
	# every request a 2xx, 3xx or 404 from a route the log names: compare
	# per route, rule and status class, downstream and upstream
	$PY "$IT_DIR/mmcheck.py" compare --url "$METRICS_URL" \
		--log "$LISTENERS_LOG" --format "$LISTENERS_FMT" ||
		fail "the agent's per-route counts differ from the proxy's log (above)"
}
