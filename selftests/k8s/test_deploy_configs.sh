#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Every configuration deploy/ ships, read by the tool that reads it, found by
# walking deploy/ (a new file is covered without touching this test; a file
# no tool here knows fails it):
#   - a kustomization.yaml: `kubectl kustomize DIR`, and its render applied
#     with `kubectl apply --dry-run=client`;
#   - Prometheus configuration (scrape_configs, global, rule_files...):
#     `promtool check config`; rule files (groups): `promtool check rules`;
#   - Kubernetes objects: `kubectl apply --dry-run=client` against the test
#     API server (--deploy-kinds: it serves discovery for every kind here,
#     with the Prometheus Operator's and the VPA's CRDs installed);
#   - the agent's config in a ConfigMap (milometer.yaml): the agent's own
#     strict parser.
# Debian's promtool is built without Kubernetes service discovery, so the
# promtool is upstream's, built once by selftests/tools/build_promtool.sh.
. "$(dirname "$0")/lib.sh"
M="$ROOT/bin/milometer"
[ -x "$M" ] || fail "build bin/milometer first"
command -v kubectl >/dev/null || fail "kubectl is not installed"
start_apiserver --deploy-kinds
ctl /ctl/objects "{\"objects\":[$(ns_obj milometer-system)]}" >/dev/null
cd "$ROOT"

# classify FILE: one word per YAML/JSON file
classify() {
	$PY - "$1" <<'EOF'
import json, os, sys, yaml
f = sys.argv[1]
if os.path.basename(f) in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
    print("kustomization"); sys.exit()
try:
    docs = [d for d in yaml.safe_load_all(open(f)) if d is not None]
except yaml.YAMLError as e:
    print("invalid", str(e).replace("\n", " ")); sys.exit()
if len(docs) == 1 and isinstance(docs[0], dict):
    d = docs[0]
    if {"scrape_configs", "global", "rule_files", "alerting", "remote_write"} & d.keys():
        print("prometheus-config"); sys.exit()
    if "groups" in d and "kind" not in d:
        print("prometheus-rules"); sys.exit()
if docs and all(isinstance(d, dict) and "apiVersion" in d and "kind" in d for d in docs):
    agent_cfg = any(d["kind"] == "ConfigMap" and "milometer.yaml" in (d.get("data") or {}) for d in docs)
    print("kubernetes-agent-config" if agent_cfg else "kubernetes"); sys.exit()
print("unknown")
EOF
}

promtool_bin() {
	[ -n "${PROMTOOL:-}" ] && return 0
	PROMTOOL=$("$ROOT/selftests/tools/build_promtool.sh") || return 1
}

# kubectl apply --dry-run=client FILE|-: the objects kubectl would create
dry_run() {
	kubectl apply --dry-run=client -f "$1" >"$T/dry.out" 2>&1 ||
		{ cat "$T/dry.out"; return 1; }
	grep -c '(dry run)' "$T/dry.out"
}

t_every_deploy_file_read_by_its_tool() {
	local f kind n checked=0 bad=0 skipped=""
	while IFS= read -r f; do
		case "$f" in
		*.yaml | *.yml | *.json) ;;
		*.sh | *.py | *.md | */Containerfile) continue ;; # programs and docs
		*) echo "  $f: no tool here knows this kind of file (teach test_deploy_configs.sh)"
		   bad=$((bad + 1)); continue ;;
		esac
		kind=$(classify "$f")
		case "$kind" in
		kustomization)
			kubectl kustomize "$(dirname "$f")" >"$T/render.yaml" 2>"$T/kz.err" ||
				{ echo "  $f: kubectl kustomize: $(cat "$T/kz.err")"; bad=$((bad + 1)); continue; }
			n=$(dry_run "$T/render.yaml") ||
				{ echo "  $f: its render: kubectl apply --dry-run=client failed"; bad=$((bad + 1)); continue; }
			log "$f: kubectl kustomize, $n objects pass kubectl apply --dry-run=client"
			;;
		prometheus-config | prometheus-rules)
			if ! promtool_bin; then
				skipped="$skipped $f"
				continue
			fi
			local sub=config cfg=$f
			[ "$kind" = prometheus-rules ] && sub=rules
			# promtool opens credential files; a pod's service-account
			# token exists only in a pod, so the check reads a copy
			# whose token path points at a file of the test's
			if grep -q '/var/run/secrets/kubernetes.io/serviceaccount/token' "$f"; then
				echo token >"$T/sa-token"
				sed "s#/var/run/secrets/kubernetes.io/serviceaccount/token#$T/sa-token#" "$f" >"$T/pt.yaml"
				cfg=$T/pt.yaml
			fi
			"$PROMTOOL" check $sub "$cfg" >"$T/pt.out" 2>&1 ||
				{ echo "  $f: promtool check $sub:"; sed 's/^/    /' "$T/pt.out"; bad=$((bad + 1)); continue; }
			log "$f: promtool check $sub passes"
			;;
		kubernetes | kubernetes-agent-config)
			n=$(dry_run "$f") ||
				{ echo "  $f: kubectl apply --dry-run=client failed"; bad=$((bad + 1)); continue; }
			log "$f: $n objects pass kubectl apply --dry-run=client"
			if [ "$kind" = kubernetes-agent-config ]; then
				$PY -c '
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "ConfigMap" and "milometer.yaml" in (d.get("data") or {}):
        open(sys.argv[2], "w").write(d["data"]["milometer.yaml"])' "$f" "$T/milometer.yaml"
				"$M" run --config "$T/milometer.yaml" --help >/dev/null 2>"$T/cfg.err" ||
					{ echo "  $f: the agent rejects its milometer.yaml: $(cat "$T/cfg.err")"; bad=$((bad + 1)); continue; }
				log "$f: its milometer.yaml passes the agent's parser"
			fi
			;;
		*)
			echo "  $f: $kind: no tool here reads it (teach test_deploy_configs.sh)"
			bad=$((bad + 1)); continue
			;;
		esac
		checked=$((checked + 1))
	done < <(find deploy -type f | sort)
	[ -z "$skipped" ] ||
		echo "SKIP promtool: no promtool with Kubernetes service discovery could be built (above); not checked:$skipped"
	log "$checked files checked, $bad failed"
	[ $bad -eq 0 ] && [ $checked -gt 0 ] && [ -z "$skipped" ]
}

# the check fires: the camelCase relabel keys of a Kubernetes CR are not
# Prometheus configuration
t_promtool_rejects_camel_case_relabel() {
	promtool_bin || fail "no promtool (above)"
	sed 's/source_labels:/sourceLabels:/' deploy/kubernetes/optional/prometheus-scrape.yaml >"$T/camel.yaml"
	if "$PROMTOOL" check config "$T/camel.yaml" >"$T/pt.out" 2>&1; then
		fail "promtool accepted sourceLabels"
	fi
	grep -q "field sourceLabels not found" "$T/pt.out" || fail "promtool failed otherwise: $(cat "$T/pt.out")"
}

run_tests t_every_deploy_file_read_by_its_tool t_promtool_rejects_camel_case_relabel
