#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Keep-alive: wrk on 2 connections for 3 s makes thousands of requests per
# connection on both legs (upstream keep-alive on); every one counted.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
# by pid this time: the master and the workers it already forked
AGENT_TARGET=(--proxy-pid "$NGINX_PID")
start_agent
wrk -t1 -c2 -d3s -H 'Host: api.example.com' \
	"http://127.0.0.1:$PROXY_PORT/v1/status" | tee "$T/wrk.txt"
wrk -t1 -c1 -d2s -H 'Host: foo.example.com' \
	"http://127.0.0.1:$PROXY_PORT/x/s404" | tee -a "$T/wrk.txt"
most=$(cut -f10 "$NGINX_LOG" | sort -n | tail -1)
log "most requests on one client connection: $most"
[ "$most" -ge 2000 ] || fail "only $most requests on one connection: not a keep-alive test"
compare_log
