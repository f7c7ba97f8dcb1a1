#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Offline checks of what `kubectl apply -k deploy/kubernetes` would create.

Reads the output of `kubectl kustomize deploy/kubernetes` (a real kustomize
render) on stdin and checks, without an API server:
  - every object is well formed (apiVersion, kind, metadata.name, namespace
    where the kind is namespaced, none where it is cluster-scoped, unique);
  - references resolve: selectors match pod templates, Services select one
    workload and name a container port, volumes exist for every mount,
    ConfigMaps and ServiceAccounts exist, RoleBindings name existing roles
    and subjects;
  - the security properties the README promises: no privileged container,
    read-only root filesystems, no privilege escalation, capabilities
    exactly BPF + PERFMON on the agent and none on the controller, hostPath
    only /sys/fs/bpf, /sys/kernel/tracing, /sys/fs/cgroup (read-only but
    bpffs), the agent's RBAC read-only, the controller writing only
    */status (patch) and Leases in its namespace, nobody reading Secrets;
  - the CRDs are structural and their CEL rules can be costed (lists and
    maps they iterate are bounded, strings they match have a maxLength,
    transition rules sit outside atomic lists).
Optional manifests (--optional FILE...) are parsed and cross-checked
against the render (PodMonitor selector, VPA target).
Prints one line per failed check and exits 1 if any failed.
"""
import argparse
import re
import sys

import yaml

NS = "milometer-system"
CLUSTER_KINDS = {"Namespace", "CustomResourceDefinition", "ClusterRole",
                 "ClusterRoleBinding"}
AGENT_CAPS = {"BPF", "PERFMON"}
HOSTPATHS = {"/sys/fs/bpf": False, "/sys/kernel/tracing": True,
             "/sys/fs/cgroup": True}  # path -> must be mounted read-only
READ_VERBS = {"get", "list", "watch"}
# create on these persists nothing: the API answers who a token is and
# what it may do (metricsAuth kubernetes; docs/tenancy.md)
REVIEWS = {("authentication.k8s.io", "tokenreviews"), ("authorization.k8s.io", "subjectaccessreviews")}


def is_review(rule):
    return rule["verbs"] == ["create"] and all(
        (g, r) in REVIEWS for g in rule["apiGroups"] for r in rule["resources"])

problems = []


def bad(msg):
    problems.append(msg)


def key(d):
    return (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])


def check_objects(docs):
    seen = set()
    for d in docs:
        for f in ("apiVersion", "kind", "metadata"):
            if f not in d:
                bad("object without %s: %r" % (f, d)[:200])
                return
        md = d["metadata"]
        if not md.get("name"):
            bad("%s without metadata.name" % d["kind"])
        if d["kind"] in CLUSTER_KINDS:
            if "namespace" in md:
                bad("cluster-scoped %s/%s has a namespace" % (d["kind"], md["name"]))
        elif md.get("namespace") != NS:
            bad("%s/%s not in namespace %s" % (d["kind"], md["name"], NS))
        if key(d) in seen:
            bad("duplicate %s" % (key(d),))
        seen.add(key(d))
        if md.get("labels", {}).get("app.kubernetes.io/part-of") != "milometer":
            bad("%s/%s lacks app.kubernetes.io/part-of=milometer" % (d["kind"], md["name"]))


def by_kind(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def one(docs, kind, name):
    m = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return m[0] if len(m) == 1 else None


def containers(pod):
    return pod.get("containers", []) + pod.get("initContainers", [])


def check_pod_security(wl, caps_add):
    name = "%s/%s" % (wl["kind"], wl["metadata"]["name"])
    pod = wl["spec"]["template"]["spec"]
    if pod.get("hostNetwork"):
        bad("%s uses hostNetwork" % name)
    if pod.get("hostIPC"):
        bad("%s uses hostIPC" % name)
    if pod.get("securityContext", {}).get("seccompProfile", {}).get("type") != "RuntimeDefault":
        bad("%s: pod seccompProfile is not RuntimeDefault" % name)
    for c in containers(pod):
        sc = c.get("securityContext", {})
        cn = "%s container %s" % (name, c["name"])
        if sc.get("privileged", False):
            bad("%s is privileged" % cn)
        if sc.get("readOnlyRootFilesystem") is not True:
            bad("%s: readOnlyRootFilesystem is not true" % cn)
        if sc.get("allowPrivilegeEscalation") is not False:
            bad("%s: allowPrivilegeEscalation is not false" % cn)
        caps = sc.get("capabilities", {})
        if caps.get("drop") != ["ALL"]:
            bad("%s: capabilities.drop is %r, want [ALL]" % (cn, caps.get("drop")))
        if set(caps.get("add", [])) != caps_add or len(caps.get("add", [])) != len(caps_add):
            bad("%s: capabilities.add is %r, want exactly %r" %
                (cn, caps.get("add", []), sorted(caps_add)))


def check_refs(docs, wl):
    name = "%s/%s" % (wl["kind"], wl["metadata"]["name"])
    spec = wl["spec"]
    tlabels = spec["template"]["metadata"].get("labels", {})
    for k, v in spec["selector"]["matchLabels"].items():
        if tlabels.get(k) != v:
            bad("%s: selector %s=%s does not match its pod template" % (name, k, v))
    pod = spec["template"]["spec"]
    sa = pod.get("serviceAccountName")
    if not sa or not one(docs, "ServiceAccount", sa):
        bad("%s: serviceAccountName %r is not in the render" % (name, sa))
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    for v in vols.values():
        cm = v.get("configMap", {}).get("name")
        if cm and not one(docs, "ConfigMap", cm):
            bad("%s: volume %s names ConfigMap %s, not in the render" % (name, v["name"], cm))
    for c in containers(pod):
        for m in c.get("volumeMounts", []):
            v = vols.get(m["name"])
            if not v:
                bad("%s: mount %s has no volume" % (name, m["name"]))
                continue
            hp = v.get("hostPath")
            if hp:
                if hp["path"] not in HOSTPATHS:
                    bad("%s: hostPath %s is not one the agent uses" % (name, hp["path"]))
                elif HOSTPATHS[hp["path"]] and not m.get("readOnly"):
                    bad("%s: hostPath %s mounted read-write" % (name, hp["path"]))
        if not c.get("image") or c["image"] == "milometer":
            bad("%s: image %r not set by the kustomization" % (name, c.get("image")))
        for p in c.get("ports", []):
            if len(p.get("name", "")) > 15:
                bad("%s: port name %s longer than 15 (IANA_SVC_NAME)" % (name, p["name"]))


def check_probes(wl):
    """/readyz gates traffic, /healthz restarts: both on a declared port."""
    name = "%s/%s" % (wl["kind"], wl["metadata"]["name"])
    c = wl["spec"]["template"]["spec"]["containers"][0]
    ports = {p.get("name") for p in c.get("ports", [])} | \
        {p["containerPort"] for p in c.get("ports", [])}
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        g = c.get(probe, {}).get("httpGet")
        if not g:
            bad("%s: no %s (httpGet %s)" % (name, probe, path))
            continue
        if g.get("path") != path:
            bad("%s: %s path %r, want %s" % (name, probe, g.get("path"), path))
        if g.get("port") not in ports:
            bad("%s: %s port %r is not a container port" % (name, probe, g.get("port")))


def check_agent(docs):
    ds = by_kind(docs, "DaemonSet")
    if len(ds) != 1:
        bad("want one DaemonSet, got %d" % len(ds))
        return
    ds = ds[0]
    pod = ds["spec"]["template"]["spec"]
    check_pod_security(ds, AGENT_CAPS)
    check_refs(docs, ds)
    check_probes(ds)
    if pod.get("hostPID") is not True:
        bad("the agent needs hostPID (BPF reports host PIDs)")
    c = pod["containers"][0]
    env = {e["name"]: e for e in c.get("env", [])}
    if env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != "spec.nodeName":
        bad("agent: NODE_NAME does not come from the downward API spec.nodeName")
    lim = c.get("resources", {}).get("limits", {}).get("memory", "")
    m = re.fullmatch(r"(\d+)Mi", lim)
    if not m or int(m.group(1)) < 150:
        bad("agent memory limit %r: must be >= 150Mi (BPF load peak)" % lim)
    ann = ds["spec"]["template"]["metadata"].get("annotations", {})
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    if ann.get("prometheus.io/scrape") != "true" or \
            str(ports.get("metrics")) != ann.get("prometheus.io/port"):
        bad("agent: prometheus.io annotations do not name the metrics port")
    for v in pod.get("volumes", []):
        if "hostPath" not in v:
            continue
        if v["hostPath"]["path"] == "/sys/fs/cgroup":
            mounts = [m for m in c["volumeMounts"] if m["name"] == v["name"]]
            if any(m["mountPath"] == "/sys/fs/cgroup" for m in mounts):
                bad("agent: host /sys/fs/cgroup over the container's own hides its memory limit")


def check_controller(docs):
    dep = by_kind(docs, "Deployment")
    if len(dep) != 1:
        bad("want one Deployment, got %d" % len(dep))
        return
    dep = dep[0]
    check_pod_security(dep, set())
    check_refs(docs, dep)
    check_probes(dep)
    pod = dep["spec"]["template"]["spec"]
    if dep["spec"].get("replicas") != 2:
        bad("controller replicas %r, want 2" % dep["spec"].get("replicas"))
    if pod.get("hostPID") or any("hostPath" in v for v in pod.get("volumes", [])):
        bad("controller uses host access")
    if pod.get("securityContext", {}).get("runAsNonRoot") is not True:
        bad("controller may run as root")
    args = " ".join(pod["containers"][0].get("args", []))
    if "controller" not in args or "--leader-elect-namespace" not in args:
        bad("controller args %r lack controller / --leader-elect-namespace" % args)


def check_services(docs):
    pods = [(w, w["spec"]["template"]) for w in by_kind(docs, "DaemonSet") + by_kind(docs, "Deployment")]
    for s in by_kind(docs, "Service"):
        sel = s["spec"].get("selector", {})
        hit = [w for w, t in pods
               if all(t["metadata"].get("labels", {}).get(k) == v for k, v in sel.items())]
        if len(hit) != 1:
            bad("Service %s selects %d workloads, want 1" % (s["metadata"]["name"], len(hit)))
            continue
        names = {p.get("name") for c in hit[0]["spec"]["template"]["spec"]["containers"]
                 for p in c.get("ports", [])}
        for p in s["spec"]["ports"]:
            if p.get("targetPort") not in names:
                bad("Service %s targetPort %r is no container port" %
                    (s["metadata"]["name"], p.get("targetPort")))


def rules_of(docs, kind, name):
    r = one(docs, kind, name)
    return r.get("rules", []) if r else None


def bound_roles(docs, sa):
    out = []
    for b in by_kind(docs, "ClusterRoleBinding") + by_kind(docs, "RoleBinding"):
        for s in b.get("subjects", []):
            if s.get("kind") == "ServiceAccount" and s.get("name") == sa:
                if s.get("namespace") != NS:
                    bad("%s/%s binds %s in namespace %r" %
                        (b["kind"], b["metadata"]["name"], sa, s.get("namespace")))
                ref = b["roleRef"]
                role = one(docs, ref["kind"], ref["name"])
                if not role:
                    bad("%s/%s names missing %s %s" %
                        (b["kind"], b["metadata"]["name"], ref["kind"], ref["name"]))
                    continue
                if b["kind"] == "RoleBinding" and ref["kind"] == "Role" and \
                        role["metadata"].get("namespace") != b["metadata"].get("namespace"):
                    bad("RoleBinding %s and its Role in different namespaces" % b["metadata"]["name"])
                out.append(role)
    return out


def check_rbac(docs):
    for r in by_kind(docs, "ClusterRole") + by_kind(docs, "Role"):
        for rule in r.get("rules", []):
            for f in ("apiGroups", "resources", "verbs"):
                if "*" in rule.get(f, []):
                    bad("%s %s: wildcard in %s" % (r["kind"], r["metadata"]["name"], f))
            if "secrets" in rule.get("resources", []):
                bad("%s %s reads secrets" % (r["kind"], r["metadata"]["name"]))
    agent = bound_roles(docs, "milometer-agent")
    if not agent:
        bad("the agent's ServiceAccount is bound to nothing")
    for r in agent:
        for rule in r.get("rules", []):
            if is_review(rule):
                continue
            if not set(rule["verbs"]) <= READ_VERBS:
                bad("agent role %s grants %s" % (r["metadata"]["name"], rule["verbs"]))
            if any("/" in res for res in rule["resources"]):
                bad("agent role %s touches a subresource %s" % (r["metadata"]["name"], rule["resources"]))
    granted = {(g, res) for r in agent for rule in r["rules"]
               for g in rule["apiGroups"] for res in rule["resources"]}
    for need in [("gateway.networking.k8s.io", "gateways"), ("gateway.networking.k8s.io", "httproutes"),
                 ("telemetry.miloapis.com", "metricdefinitions"), ("telemetry.miloapis.com", "metricpolicies"),
                 ("about.k8s.io", "clusterproperties"), ("", "pods"), ("", "namespaces")]:
        if need not in granted:
            bad("the agent cannot watch %s/%s" % need)
    ctl = bound_roles(docs, "milometer-controller")
    writes = set()
    for r in ctl:
        for rule in r.get("rules", []):
            if is_review(rule):
                continue
            w = set(rule["verbs"]) - READ_VERBS
            # --translate writes named objects only (rbac-translate.yaml)
            if w and set(rule["resources"]) & {"configmaps", "prometheusrules"} and \
                    not rule.get("resourceNames"):
                bad("%s %s writes %s without resourceNames" %
                    (r["kind"], r["metadata"]["name"], rule["resources"]))
            for g in rule["apiGroups"]:
                for res in rule["resources"]:
                    for v in w:
                        writes.add((r["kind"], g, res, v))
    want = {("ClusterRole", "telemetry.miloapis.com", "metricdefinitions/status", "patch"),
            ("ClusterRole", "telemetry.miloapis.com", "metricpolicies/status", "patch"),
            ("Role", "coordination.k8s.io", "leases", "create"),
            ("Role", "coordination.k8s.io", "leases", "update"),
            ("Role", "", "configmaps", "create"), ("Role", "", "configmaps", "patch"),
            ("Role", "monitoring.coreos.com", "prometheusrules", "create"),
            ("Role", "monitoring.coreos.com", "prometheusrules", "patch")}
    if writes != want:
        bad("controller write grants %s, want exactly %s" % (sorted(writes), sorted(want)))
    for r in ctl:
        if r["kind"] == "Role" and r["metadata"].get("namespace") != NS:
            bad("controller Role %s outside %s" % (r["metadata"]["name"], NS))


def walk_schema(node, path, in_atomic_list, crd):
    if not isinstance(node, dict):
        return
    if "type" not in node and not node.get("x-kubernetes-int-or-string") and \
            not node.get("x-kubernetes-preserve-unknown-fields"):
        bad("%s: %s has no type (not structural)" % (crd, path))
    for v in node.get("x-kubernetes-validations", []):
        rule = v.get("rule", "")
        if not rule or not v.get("message"):
            bad("%s: %s: a CEL rule without rule or message" % (crd, path))
        iterates = re.search(r"\bself\.(all|exists|exists_one|map|filter)\(", rule)
        if iterates and node.get("type") == "array" and "maxItems" not in node:
            bad("%s: %s: rule iterates an unbounded list (add maxItems)" % (crd, path))
        if iterates and node.get("type") == "object" and "additionalProperties" in node \
                and "maxProperties" not in node:
            bad("%s: %s: rule iterates an unbounded map (add maxProperties)" % (crd, path))
        for f in set(re.findall(r"\b(?:self|oldSelf)\.([a-zA-Z]+)\.(?:all|exists|exists_one|map|filter)\(", rule)):
            sub = node.get("properties", {}).get(f, {})
            if sub.get("type") == "array" and "maxItems" not in sub:
                bad("%s: %s: rule iterates the unbounded list %s (add maxItems)" % (crd, path, f))
            if sub.get("type") == "object" and "maxProperties" not in sub:
                bad("%s: %s: rule iterates the unbounded map %s (add maxProperties)" % (crd, path, f))
        if node.get("type") == "object" and "additionalProperties" in node and ".matches(" in rule:
            bad("%s: %s: matches() over map keys (no maxLength) is costed at the request size" % (crd, path))
        if "self.matches(" in rule and node.get("type") == "string" and "maxLength" not in node:
            bad("%s: %s: matches() on a string without maxLength" % (crd, path))
        if "oldSelf" in rule and in_atomic_list:
            bad("%s: %s: transition rule inside an atomic list never runs" % (crd, path))
        # fields the rule reads must exist in this schema level
        for f in re.findall(r"\bself\.([a-zA-Z]+)\b", rule):
            if f in ("all", "exists", "exists_one", "map", "filter", "matches", "startsWith",
                     "lowerAscii", "size", "split", "substring"):
                continue
            if f not in node.get("properties", {}):
                bad("%s: %s: rule reads self.%s, not in the schema" % (crd, path, f))
    for k, sub in node.get("properties", {}).items():
        walk_schema(sub, path + "." + k, in_atomic_list, crd)
    if "items" in node:
        atomic = node.get("x-kubernetes-list-type", "atomic") == "atomic"
        walk_schema(node["items"], path + "[]", in_atomic_list or atomic, crd)
    if isinstance(node.get("additionalProperties"), dict):
        walk_schema(node["additionalProperties"], path + "{}", in_atomic_list, crd)


def check_crds(docs):
    crds = by_kind(docs, "CustomResourceDefinition")
    if {c["metadata"]["name"] for c in crds} != {"metricdefinitions.telemetry.miloapis.com",
                                                 "metricpolicies.telemetry.miloapis.com"}:
        bad("CRDs in the render: %s" % [c["metadata"]["name"] for c in crds])
    for c in crds:
        s = c["spec"]
        n = c["metadata"]["name"]
        if n != "%s.%s" % (s["names"]["plural"], s["group"]):
            bad("CRD %s: name is not <plural>.<group>" % n)
        stored = [v for v in s["versions"] if v.get("storage")]
        if len(stored) != 1:
            bad("CRD %s: %d storage versions" % (n, len(stored)))
        nrules = 0
        for v in s["versions"]:
            if v.get("subresources", {}).get("status") != {}:
                bad("CRD %s %s: no status subresource (the controller writes /status)" % (n, v["name"]))
            walk_schema(v["schema"]["openAPIV3Schema"], "", False, n)
            nrules += yaml.safe_dump(v["schema"]).count("rule:")
        if nrules < 3:
            bad("CRD %s: %d CEL rules" % (n, nrules))


def check_optional(docs, paths):
    ds = by_kind(docs, "DaemonSet")
    for p in paths:
        with open(p) as f:
            for d in yaml.safe_load_all(f):
                if not d:
                    continue
                if p.endswith("prometheus-scrape.yaml"):
                    if not d.get("scrape_configs"):
                        bad("%s: no scrape_configs" % p)
                    continue
                if d.get("metadata", {}).get("namespace") != NS:
                    bad("%s: not in %s" % (p, NS))
                if d["kind"] == "PodMonitor":
                    sel = d["spec"]["selector"]["matchLabels"]
                    for w in docs:
                        if w["kind"] in ("DaemonSet", "Deployment"):
                            lab = w["spec"]["template"]["metadata"]["labels"]
                            if not all(lab.get(k) == v for k, v in sel.items()):
                                bad("%s: does not select %s" % (p, w["metadata"]["name"]))
                elif d["kind"] == "VerticalPodAutoscaler":
                    t = d["spec"]["targetRef"]
                    if not ds or t["kind"] != "DaemonSet" or t["name"] != ds[0]["metadata"]["name"]:
                        bad("%s: targetRef %r is not the agent DaemonSet" % (p, t))
                    cn = {c["name"] for c in ds[0]["spec"]["template"]["spec"]["containers"]}
                    for cp in d["spec"]["resourcePolicy"]["containerPolicies"]:
                        if cp["containerName"] not in cn:
                            bad("%s: containerName %s not in the DaemonSet" % (p, cp["containerName"]))
                        if cp.get("controlledValues") != "RequestsOnly":
                            bad("%s: a VPA scaling the limit could push it under the BPF load peak" % p)
                    if "per-node" in p and d["spec"].get("scope") != "node":
                        bad("%s: no scope: node (KEP-4943)" % p)
                else:
                    bad("%s: unexpected kind %s" % (p, d["kind"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--optional", nargs="*", default=[])
    a = ap.parse_args()
    docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
    if not docs:
        print("k8s_manifests: empty render")
        return 1
    check_objects(docs)
    check_agent(docs)
    check_controller(docs)
    check_services(docs)
    check_rbac(docs)
    check_crds(docs)
    check_optional(docs, a.optional)
    for p in problems:
        print("k8s_manifests: " + p)
    print("k8s_manifests: %d objects, %d problems" % (len(docs), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
