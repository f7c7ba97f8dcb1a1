# SPDX-License-Identifier: Apache-2.0
# awk -f compare.awk ACCESS_LOG METRICS: the agent's request counters must
# equal nginx's access log, per (route, rule, status class), for both legs.
# The same keys as selftests/integration/mmcheck.py (which needs python, not
# in the guest): log fields are gen_nginx's tab-separated
#   route status request_time upstream_response_time upstream_status ...
# with route "NS/NAME rule N", "unmatched" or "-"; METRICS is the agent's
# Prometheus text. Prints both tables; exit status 1 on any difference.
BEGIN {
	FS = "\t"
	down = "envoy_http_downstream_rq_total"
	up = "envoy_cluster_upstream_rq_total"
}

function cls(code) {
	code += 0
	if (code == 0 || code == 499 || code == -1) return "aborted"
	if (code >= 100 && code <= 599) return int(code / 100) "xx"
	return "other"
}

# last status of "502, 200" (nginx retries) or "-"
function last_status(v,   n, a) {
	gsub(/:/, ",", v)
	n = split(v, a, ",")
	v = a[n]
	gsub(/ /, "", v)
	return v
}

function label(line, name,   s) {
	if (!match(line, "[{,]" name "=\"[^\"]*\"")) return ""
	s = substr(line, RSTART + length(name) + 3, RLENGTH - length(name) - 4)
	return s
}

# the access log
FNR == NR {
	if ($0 ~ /^[ \t]*$/) next
	r = $1; rule = "-"
	if (r == "" || r == "-") r = "-"
	else if (r != "unmatched" && match(r, / rule [0-9]+$/)) {
		rule = substr(r, RSTART + 6)
		r = substr(r, 1, RSTART - 1)
	}
	k = r SUBSEP rule
	want["down", k SUBSEP cls($2)]++
	us = last_status($5)
	if (us != "" && us != "-") want["up", k SUBSEP cls(us)]++
	else if ($4 != "" && $4 != "-") want["up", k SUBSEP "aborted"]++
	next
}

# the agent's /metrics
{
	split($0, f, " ")
	name = f[1]
	sub(/\{.*/, "", name)
	if (name == down) leg = "down"
	else if (name == up) leg = "up"
	else next
	line = $0
	sub(/\} .*/, "}", line)
	v = $0
	sub(/.*\} /, "", v)
	sub(/ .*/, "", v)
	n = label(line, "k8s_httproute_name")
	ns = label(line, "k8s_namespace_name")
	if (n == "unmatched") r = "unmatched"
	else if (n == "") r = "-"
	else if (ns == "") r = n
	else r = ns "/" n
	rule = "-"
	cl = label(line, "envoy_cluster_name")
	if (cl ~ /\/rule\/[0-9]+$/) { rule = cl; sub(/.*\/rule\//, "", rule) }
	if (label(line, "milometer_aborted") == "true") c = "aborted"
	else {
		c = label(line, "http_response_status_code_class")
		if (c == "") c = cls(label(line, "http_response_status_code"))
	}
	got[leg, r SUBSEP rule SUBSEP c] += v
}

END {
	bad = 0
	for (k in want) all[k] = 1
	for (k in got) if (got[k] + 0 != 0) all[k] = 1
	for (li = 1; li <= 2; li++) {
		leg = li == 1 ? "down" : "up"
		printf "  %s requests:\n", leg == "down" ? "downstream" : "upstream"
		printf "    %-22s %-5s %-8s %7s %7s\n", "route", "rule", "class", "log", "agent"
		nk = 0
		for (k in all) {
			split(k, p, SUBSEP)
			if (p[1] == leg) keys[++nk] = k
		}
		# insertion sort: busybox awk has no asort
		for (i = 2; i <= nk; i++) {
			x = keys[i]
			for (j = i - 1; j >= 1 && keys[j] > x; j--) keys[j + 1] = keys[j]
			keys[j + 1] = x
		}
		tw = 0; tg = 0
		for (i = 1; i <= nk; i++) {
			k = keys[i]
			split(k, p, SUBSEP)
			w = want[k] + 0; g = got[k] + 0
			tw += w; tg += g
			mark = w == g ? "" : "   <-- differs"
			if (w != g) bad++
			printf "    %-22s %-5s %-8s %7d %7d%s\n", p[2], p[3], p[4], w, g, mark
		}
		printf "    total %d log, %d agent\n", tw, tg
		if (tw == 0) { print "    (the log has no requests for this leg)"; bad++ }
	}
	exit bad ? 1 : 0
}
