#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A test stand-in for kube-apiserver: the wire protocol milometer uses.

NOT a kube-apiserver. It implements, for the resources milometer reads and
writes, what client-go/kubectl/python-kubernetes rely on, each behaviour
taken from the Kubernetes API conventions and apiserver code:

  * HTTPS with a server cert signed by a CA the test makes; bearer tokens
    (401 Unauthorized Status on a bad one) or client certificates (CN = user)
  * RBAC-like denial: 403 Forbidden Status naming verb, resource and group
  * discovery: /version /api /apis /api/v1 /apis/G /apis/G/V (legacy JSON;
    kubectl falls back to it from aggregated discovery); OpenAPI v3 and v2
    (v2 as JSON or protobuf: kubectl before 1.27 validates with it), both
    permissive: no schema per kind
  * list: resourceVersion ""/"0"/N, limit/continue (pages served from a
    snapshot taken at the first page, like etcd; a continue token older
    than the compaction floor is 410 Expired), fieldSelector
    (metadata.name, metadata.namespace, spec.nodeName on pods), labelSelector
    (=, ==, !=, in, notin, exists, !exists); list items of core types carry
    no kind/apiVersion (as the real server's typed lists), CR items do
  * watch: chunked newline-terminated JSON events ADDED/MODIFIED/DELETED/
    BOOKMARK/ERROR; RV ""/"0" start with synthetic ADDED, RV N replays
    history after N; an RV older than the compaction floor is answered
    like the watch cache: HTTP 200 and one ERROR event with a 410 Expired
    Status; allowWatchBookmarks (a bookmark every --bookmark-interval and
    one just before the deadline); timeoutSeconds ends the stream cleanly;
    objects entering/leaving a selector are ADDED/DELETED
  * create (POST), update (PUT, 409 on a stale resourceVersion), delete,
    patch: merge-patch+json; strategic-merge-patch+json only for core types
    (treated as a merge patch: a simplification) and 415 for custom
    resources as the real server; apply-patch+yaml (server-side apply)
  * /status subresource for resources that declare one: writes to the main
    resource ignore status, writes to /status touch only status;
    metadata.generation bumps on spec changes only
  * server-side apply, a simple model: field ownership per manager as sets of
    paths (maps recurse, lists are atomic except lists declared as map
    lists, here status.conditions keyed by type); a field owned by another
    applier with a different value is a 409 Conflict unless force=true,
    which moves ownership; fields the manager stops applying are removed
    when nobody else owns them. Not modelled: ownership by Update
    operations (PUT/merge patch record no managed fields), set lists,
    granular list ownership other than status.conditions, defaulting.
  * Leases (coordination.k8s.io/v1), namespaced, plain create/update/get
  * custom resources can be installed and removed at run time (404 when
    absent, like a missing CRD)
  * --deploy-kinds: Services, ConfigMaps, ServiceAccounts, DaemonSets,
    Deployments, RBAC, CRDs, PodMonitors and VPAs too (discovery and plain
    storage, no schema validation), for `kubectl apply --dry-run`
  * authentication.k8s.io/v1 TokenReview, authorization.k8s.io/v1
    SubjectAccessReview and SelfSubjectAccessReview (kubectl auth can-i),
    and the serviceaccounts/token subresource (TokenRequest: kubectl create
    token), with kube-apiserver's request and response shapes (201 Created,
    the request echoed with its status filled in; 422 Invalid for a
    SubjectAccessReview without exactly one of resourceAttributes /
    nonResourceAttributes or without user/groups). Reviews are decided by an
    RBAC-like rule list (see AUTHZ below), then by the RBAC objects stored
    here (Roles, ClusterRoles and their bindings, as kube-apiserver's RBAC
    authorizer reads them), and each one answered is recorded. An admin
    may impersonate (Impersonate-User, Impersonate-Group: kubectl --as):
    a SelfSubjectAccessReview is then the impersonated user's, with the
    groups kube-apiserver adds to a service account.

Faults and state for tests, on a plain-HTTP control port (127.0.0.1 only):
  POST /ctl/tokens      {"valid": ["t1", ...]}         token rotation
  POST /ctl/deny        {"user": U, "verb": V, "group": G, "resource": R}
  POST /ctl/fault       {"match": substring of path?query, "status": 429,
                         "retry_after": 1, "count": 1, "method": "GET",
                         "mode": "http"|"stream_gone"|"close"}
  POST /ctl/compact     forget history: watches/continues at older RVs 410;
                        {"kill_watches": true} also ends open watches with
                        an in-stream 410 ERROR event
  POST /ctl/close_watches                               drop watch streams
  POST /ctl/crd         {"resource": "httproutes", "installed": false}
  POST /ctl/objects     {"objects": [...]} create-or-replace in bulk
  POST /ctl/delete      {"resource": R, "namespace": NS, "name": N,
                         "silent": true (no watch event: lost to compaction)}
  POST /ctl/split       {"max": N}  write watch events in random 1..N chunks
  GET  /ctl/stats       requests and bytes per user agent; POST resets
  GET  /ctl/requests    the last requests (method, path, status, bytes, ua)
  GET  /ctl/watches     open watches
  POST /ctl/authz       AUTHZ: {"users": {TOKEN: {"username": U, "uid": ID,
                         "groups": [...], "extra": {K: [V...]}}},
                         "rules": [{"users": [...], "groups": [...],
                         "verbs": [...], "apiGroups": [...], "resources":
                         [...], "namespaces": [...] (absent: all),
                         "resourceNames": [...] (absent: all; a request
                         without a name matches only rules without them),
                         "nonResourceURLs": [...]}]} replaces the model
                         (also --authz FILE at start); "*" matches any
  GET  /ctl/reviews     every TokenReview/SubjectAccessReview answered:
                         {"kind", "spec", "status", "user" (the caller)};
                         POST resets
State is saved to --state FILE (periodically and on SIGTERM) and loaded on
start, so a restart keeps resourceVersions like etcd does.
"""
import argparse
import base64
import copy
import datetime
import json
import os
import random
import re
import signal
import socket
import ssl
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

try:
    import yaml
except ImportError:  # apply bodies are then accepted as JSON only
    yaml = None

# group, version, resource, kind, namespaced, has status subresource,
# custom resource (CRD: can be removed; 415 on strategic merge patch)
RESOURCES = [
    ("", "v1", "namespaces", "Namespace", False, True, False),
    ("", "v1", "pods", "Pod", True, True, False),
    ("", "v1", "configmaps", "ConfigMap", True, False, False),
    ("", "v1", "serviceaccounts", "ServiceAccount", True, False, False),
    ("", "v1", "services", "Service", True, True, False),
    ("coordination.k8s.io", "v1", "leases", "Lease", True, False, False),
    ("gateway.networking.k8s.io", "v1", "gateways", "Gateway", True, True, True),
    ("gateway.networking.k8s.io", "v1", "httproutes", "HTTPRoute", True, True, True),
    ("gateway.networking.k8s.io", "v1", "gatewayclasses", "GatewayClass", False, True, True),
    # deploy/crds: scope Cluster
    ("telemetry.miloapis.com", "v1alpha1", "metricdefinitions", "MetricDefinition", False, True, True),
    ("telemetry.miloapis.com", "v1alpha1", "metricpolicies", "MetricPolicy", False, True, True),
    ("about.k8s.io", "v1alpha1", "clusterproperties", "ClusterProperty", False, False, True),
    ("monitoring.coreos.com", "v1", "prometheusrules", "PrometheusRule", True, False, True),
    # read-only: one object per installed custom resource above (what
    # kube-state-metrics' CustomResourceState discovery watches)
    ("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
     False, False, False),
]
# --deploy-kinds: what deploy/ manifests hold, served (discovery, plain
# storage, no validation) so that `kubectl apply --dry-run` can map them
DEPLOY_RESOURCES = [
    ("", "v1", "services", "Service", True, True, False),
    ("", "v1", "configmaps", "ConfigMap", True, False, False),
    ("", "v1", "serviceaccounts", "ServiceAccount", True, False, False),
    ("", "v1", "secrets", "Secret", True, False, False),
    ("apps", "v1", "daemonsets", "DaemonSet", True, True, False),
    ("apps", "v1", "deployments", "Deployment", True, True, False),
    ("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False, False, False),
    ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False, False, False),
    ("rbac.authorization.k8s.io", "v1", "roles", "Role", True, False, False),
    ("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True, False, False),
    ("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False, True, False),
    # the Prometheus Operator's and the VPA's CRDs, as a cluster with them has
    ("monitoring.coreos.com", "v1", "podmonitors", "PodMonitor", True, False, True),
    ("autoscaling.k8s.io", "v1", "verticalpodautoscalers", "VerticalPodAutoscaler", True, True, True),
]
# list-type=map lists (x-kubernetes-list-map-keys) known to the SSA model
MAP_LISTS = {("status", "conditions"): "type"}


class Res:
    def __init__(self, group, version, plural, kind, namespaced, status, crd):
        self.group, self.version, self.plural, self.kind = group, version, plural, kind
        self.namespaced, self.status, self.crd = namespaced, status, crd
        self.installed = True

    @property
    def api_version(self):
        return f"{self.group}/{self.version}" if self.group else self.version

    def fields(self):
        f = ["metadata.name", "metadata.namespace"]
        if self.plural == "pods":
            f += ["spec.nodeName", "status.phase"]
        return f


def qbool(v):
    """Query booleans as Go's strconv.ParseBool reads them (python-kubernetes
    sends watch=True)."""
    return v in ("1", "t", "T", "TRUE", "true", "True")


def now_iso():
    return datetime.datetime.utcnow().replace(microsecond=0).isoformat() + "Z"


def status_obj(code, reason, message, details=None):
    s = {"kind": "Status", "apiVersion": "v1", "metadata": {},
         "status": "Failure", "message": message, "reason": reason, "code": code}
    if details:
        s["details"] = details
    return s


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.status = status_obj(code, reason, message, details)
        self.code = code
        self.headers = headers or {}


# ---- selectors ----

def parse_label_selector(s):
    reqs = []
    if not s:
        return reqs
    # split on commas outside parentheses
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    for p in parts:
        p = p.strip()
        m = re.match(r"^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$", p)
        if m:
            vals = {v.strip() for v in m.group(3).split(",") if v.strip()}
            reqs.append((m.group(1), m.group(2), vals))
            continue
        m = re.match(r"^([\w./-]+)\s*(==|!=|=)\s*([\w./-]*)$", p)
        if m:
            op = {"==": "in", "=": "in", "!=": "notin"}[m.group(2)]
            reqs.append((m.group(1), op, {m.group(3)}))
            continue
        m = re.match(r"^(!?)([\w./-]+)$", p)
        if m:
            reqs.append((m.group(2), "!exists" if m.group(1) else "exists", None))
            continue
        raise ApiError(400, "BadRequest", f"unable to parse requirement: {p!r}")
    return reqs


def label_match(reqs, obj):
    labels = obj.get("metadata", {}).get("labels") or {}
    for key, op, vals in reqs:
        if op == "in" and labels.get(key) not in vals:
            return False
        if op == "notin" and key in labels and labels[key] in vals:
            return False
        if op == "exists" and key not in labels:
            return False
        if op == "!exists" and key in labels:
            return False
    return True


def parse_field_selector(s, res):
    reqs = []
    if not s:
        return reqs
    for p in s.split(","):
        m = re.match(r"^([\w.]+)\s*(==|!=|=)\s*(.*)$", p.strip())
        if not m:
            raise ApiError(400, "BadRequest", f"invalid field selector: {p!r}")
        if m.group(1) not in res.fields():
            raise ApiError(400, "BadRequest",
                           f"field label not supported: {m.group(1)}")
        reqs.append((m.group(1), m.group(2) != "!=", m.group(3)))
    return reqs


def field_match(reqs, obj):
    for path, eq, val in reqs:
        cur = obj
        for k in path.split("."):
            cur = cur.get(k) if isinstance(cur, dict) else None
        cur = "" if cur is None else str(cur)
        if (cur == val) != eq:
            return False
    return True


# ---- server-side apply (simple model, see the module doc) ----

def field_paths(obj, prefix=()):
    """Leaf paths of an applied config; map lists yield one path per key."""
    out = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            if prefix == () and k in ("apiVersion", "kind"):
                continue
            if prefix == ("metadata",) and k in ("name", "namespace",
                                                "resourceVersion", "managedFields"):
                continue
            p = prefix + (k,)
            key = MAP_LISTS.get(p)
            if key and isinstance(v, list):
                for item in v:
                    if isinstance(item, dict) and key in item:
                        kp = p + (f"k:{json.dumps({key: item[key]})}",)
                        out.add(kp)
                        out |= {kp + sub for sub in field_paths(item) if True}
                continue
            if isinstance(v, dict) and v:
                out |= field_paths(v, p)
            else:
                out.add(p)
    return out


def get_path(obj, path):
    cur = obj
    for k in path:
        if k.startswith("k:") and isinstance(cur, list):
            want = json.loads(k[2:])
            nxt = None
            for item in cur:
                if isinstance(item, dict) and all(item.get(a) == b for a, b in want.items()):
                    nxt = item
            cur = nxt
        elif isinstance(cur, dict):
            cur = cur.get(k)
        else:
            return None
        if cur is None:
            return None
    return cur


def del_path(obj, path):
    parent = get_path(obj, path[:-1]) if len(path) > 1 else obj
    k = path[-1]
    if isinstance(parent, dict):
        parent.pop(k, None)
    elif isinstance(parent, list) and k.startswith("k:"):
        want = json.loads(k[2:])
        parent[:] = [i for i in parent
                     if not all(i.get(a) == b for a, b in want.items())]


def merge_apply(live, cfg, prefix=()):
    """Apply cfg onto live: maps merge, map lists merge by key, others replace."""
    for k, v in cfg.items():
        p = prefix + (k,)
        key = MAP_LISTS.get(p)
        if key and isinstance(v, list):
            cur = live.get(k) if isinstance(live.get(k), list) else []
            for item in v:
                for i, old in enumerate(cur):
                    if isinstance(old, dict) and old.get(key) == item.get(key):
                        cur[i] = copy.deepcopy(item)
                        break
                else:
                    cur.append(copy.deepcopy(item))
            live[k] = cur
        elif isinstance(v, dict) and isinstance(live.get(k), dict):
            merge_apply(live[k], v, p)
        else:
            live[k] = copy.deepcopy(v)


def path_str(p):
    return "." + ".".join(p)


def encode_fields(paths):
    tree = {}
    for p in sorted(paths):
        cur = tree
        for k in p:
            name = k if k.startswith("k:") else "f:" + k
            cur = cur.setdefault(name, {})
    return tree


def decode_fields(tree, prefix=()):
    out = set()
    for k, v in tree.items():
        if k == ".":
            continue
        p = prefix + ((k[2:] if k.startswith("f:") else k),)
        if v:
            sub = decode_fields(v, p)
            out |= sub
            if p[-1].startswith("k:"):
                out.add(p)
        else:
            out.add(p)
    return out


def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        else:
            target[k] = merge_patch(target.get(k), v)
    return target


# ---- the store ----

class Store:
    def __init__(self, bookmark_interval):
        self.lock = threading.Condition()
        self.rv = 1
        self.floor = 0  # events with rv <= floor are forgotten
        self.objects = {}  # plural -> {(ns, name): obj}
        self.history = []  # (rv, plural, type, obj, prev)
        self.res = {}
        for r in RESOURCES:
            x = Res(*r)
            self.res[x.plural] = x
            self.objects[x.plural] = {}
        self.snapshots = {}  # continue id -> (rv, items, created)
        self.dirty = False
        self.bookmark_interval = bookmark_interval
        self.kill_gen = 0  # bumped to end open watches with an in-stream 410
        self.close_gen = 0
        with self.lock:
            for r in self.res.values():
                self.crd_sync(r)

    def crd_sync(self, r):
        """The CustomResourceDefinition object of custom resource r follows
        r.installed (ADDED / DELETED watch events)."""
        if not r.crd:
            return
        objs = self.objects["customresourcedefinitions"]
        key = ("", f"{r.plural}.{r.group}")
        if r.installed and key not in objs:
            o = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                 "metadata": {"name": key[1], "uid": str(uuid.uuid4()),
                              "resourceVersion": str(self.next_rv()),
                              "creationTimestamp": now_iso(), "generation": 1},
                 "spec": {"group": r.group,
                          "names": {"kind": r.kind, "plural": r.plural,
                                    "singular": r.kind.lower(), "listKind": r.kind + "List"},
                          "scope": "Namespaced" if r.namespaced else "Cluster",
                          "versions": [{"name": r.version, "served": True, "storage": True}]}}
            objs[key] = o
            self.record("customresourcedefinitions", "ADDED", o, None)
        elif not r.installed and key in objs:
            o = copy.deepcopy(objs.pop(key))
            o["metadata"]["resourceVersion"] = str(self.next_rv())
            self.record("customresourcedefinitions", "DELETED", o, o)

    def record(self, plural, typ, obj, prev):
        self.history.append((self.rv, plural, typ, obj, prev))
        if len(self.history) > 200000:
            drop = len(self.history) - 100000
            self.floor = self.history[drop - 1][0]
            del self.history[:drop]
        self.dirty = True
        self.lock.notify_all()

    def next_rv(self):
        self.rv += 1
        return self.rv

    def dump(self):
        return {"rv": self.rv,
                "installed": {p: r.installed for p, r in self.res.items()},
                "objects": {p: list(o.values()) for p, o in self.objects.items()}}

    def load(self, d):
        self.rv = d["rv"]
        # history does not survive a restart: like a new watch cache, older
        # RVs are too old after it
        self.floor = self.rv
        for p, inst in d.get("installed", {}).items():
            if p in self.res:
                self.res[p].installed = inst
        for p, objs in d["objects"].items():
            for o in objs:
                m = o["metadata"]
                self.objects[p][(m.get("namespace", ""), m["name"])] = o


class Server:
    def __init__(self, args):
        self.args = args
        self.store = Store(args.bookmark_interval)
        self.tokens = {t: "admin" for t in args.token}
        self.users = {"admin"}
        self.deny = []  # (user, verb, group, resource)
        self.authz = {"users": {}, "rules": []}
        self.reviews = []
        if args.authz:
            with open(args.authz) as f:
                self.authz = json.load(f)
            self.authz.setdefault("users", {})
            self.authz.setdefault("rules", [])
        self.faults = []
        self.split = 0
        self.stats = {}
        self.requests = []
        self.watches = {}
        self.wid = 0
        self.mu = threading.Lock()
        if args.state and os.path.exists(args.state):
            with open(args.state) as f:
                self.store.load(json.load(f))
        for spec in args.deny or []:
            u, v, g, r = spec.split(":")
            self.deny.append((u, v, g, r))
        for spec in args.user_token or []:
            t, u = spec.split("=", 1)
            self.tokens[t] = u

    def save(self):
        if not self.args.state:
            return
        with self.store.lock:
            d = json.dumps(self.store.dump())
            self.store.dirty = False
        tmp = self.args.state + ".tmp"
        with open(tmp, "w") as f:
            f.write(d)
        os.replace(tmp, self.args.state)

    def begin(self, ua, method, path):
        """Log a request when it starts: a watch may never end."""
        e = {"method": method, "path": path, "code": 0, "bytes": 0, "ua": ua,
             "user": None, "t": time.time()}
        with self.mu:
            st = self.stats.setdefault(ua, {"requests": 0, "bytes": 0,
                                            "watches": 0, "lists": 0})
            st["requests"] += 1
            if re.search(r"[?&]watch=(1|t|T|TRUE|true|True)(&|$)", path):
                st["watches"] += 1
            self.requests.append(e)
            if len(self.requests) > 20000:
                del self.requests[:10000]
        return e

    def add_bytes(self, ua, n):
        """Bytes as they are sent: a watch's events count while it is open."""
        with self.mu:
            st = self.stats.setdefault(ua, {"requests": 0, "bytes": 0,
                                            "watches": 0, "lists": 0})
            st["bytes"] += n

    def account(self, ua, method, path, code, nbytes, user, entry):
        with self.mu:
            entry.update(code=code, bytes=nbytes, user=user)

    def take_fault(self, method, full):
        with self.mu:
            for f in self.faults:
                if f.get("count", 1) <= 0:
                    continue
                if f.get("method") and f["method"] != method:
                    continue
                if f.get("match", "") not in full:
                    continue
                f["count"] = f.get("count", 1) - 1
                return dict(f)
        return None


# ---- object handling ----

def clean_for_list(res, obj):
    o = copy.deepcopy(obj)
    if not res.crd:
        # typed lists (core, coordination) carry no kind/apiVersion per item
        o.pop("kind", None)
        o.pop("apiVersion", None)
    return o


def spec_part(obj):
    return {k: v for k, v in obj.items()
            if k not in ("metadata", "status", "kind", "apiVersion")}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "k8s-test-apiserver"
    srv = None  # Server

    def log_message(self, fmt, *a):
        if self.srv.args.verbose:
            sys.stderr.write("apiserver: " + (fmt % a) + "\n")

    # -- plumbing --
    def send_json(self, code, obj, headers=None):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Audit-Id", str(uuid.uuid4()))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.nbytes += len(body)
        self.srv.add_bytes(self.headers.get("User-Agent", ""), len(body))
        self.code = code

    def body(self):
        return self._body

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            return self.rfile.read(n)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return b""

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def authenticate(self):
        try:
            cert = self.connection.getpeercert()
        except (AttributeError, ValueError):
            cert = None
        if cert:
            for rdn in cert.get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        return v
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            t = auth[7:].strip()
            if t in self.srv.tokens:
                return self.srv.tokens[t]
            u = self.srv.authz["users"].get(t)
            return u["username"] if u else None
        return None

    def user_info(self):
        """The caller as a TokenReview would describe it."""
        auth = self.headers.get("Authorization", "")
        u = self.srv.authz["users"].get(auth[7:].strip()) if auth.startswith("Bearer ") else None
        if u:
            return u
        # the static admin tokens and client certificates: cluster admins
        return {"username": self.user, "groups": ["system:masters", "system:authenticated"]}

    # -- authentication.k8s.io / authorization.k8s.io --
    def review_object(self, kind, group):
        if "protobuf" in self.headers.get("Content-Type", ""):
            o = decode_review(self.body(), kind, group)
            if o is None:
                raise ApiError(415, "UnsupportedMediaType",
                               "this test server accepts JSON bodies only (no protobuf)")
            self.body = lambda: json.dumps(o).encode()
        try:
            o = json.loads(self.body() or b"{}")
        except ValueError:
            raise ApiError(400, "BadRequest", "the request body is not JSON")
        if o.get("kind") not in (None, kind):
            raise ApiError(400, "BadRequest", f"the body is a {o.get('kind')}, not a {kind}")
        o["kind"], o["apiVersion"] = kind, group + "/v1"
        o["metadata"] = {"creationTimestamp": None}
        o.setdefault("spec", {})
        return o

    def check_create(self, group, plural):
        for u, v, g, r in self.srv.deny:
            if u == self.user and v in ("create", "*") and g == group and r in (plural, "*"):
                raise ApiError(403, "Forbidden",
                               f'{plural}.{group} is forbidden: User "{self.user}" cannot create '
                               f'resource "{plural}" in API group "{group}" at the cluster scope',
                               {"group": group, "kind": plural})

    def record_review(self, o):
        with self.srv.mu:
            self.srv.reviews.append({"kind": o["kind"], "spec": copy.deepcopy(o["spec"]),
                                     "status": o["status"], "user": self.user})

    def token_review(self):
        self.check_create("authentication.k8s.io", "tokenreviews")
        o = self.review_object("TokenReview", "authentication.k8s.io")
        spec = o["spec"]
        tok = spec.get("token", "")
        u = self.srv.authz["users"].get(tok)
        if u is None and tok in self.srv.tokens:
            u = {"username": self.srv.tokens[tok], "groups": ["system:masters", "system:authenticated"]}
        want = spec.get("audiences") or []
        have = (u or {}).get("audiences") or ["https://kubernetes.default.svc.cluster.local"]
        if u and want and not set(want) & set(have):
            u = None
        if u:
            user = {k: v for k, v in u.items() if k in ("username", "uid", "groups", "extra") and v}
            o["status"] = {"authenticated": True, "user": user,
                           "audiences": [a for a in have if not want or a in want]}
        else:
            o["status"] = {"user": {}, "error": "[invalid bearer token, token lookup failed]"}
        self.record_review(o)
        return self.send_json(201, o)

    def rbac_allows(self, user, groups, attrs, nonres):
        for r in self.srv.authz["rules"]:
            if not (user in r.get("users", []) or set(groups) & set(r.get("groups", []))):
                continue
            verb = attrs.get("verb", "")
            if not ({"*", verb} & set(r.get("verbs", []))):
                continue
            if nonres:
                path = attrs.get("path", "")
                if any(u == path or u == "*" or (u.endswith("*") and path.startswith(u[:-1]))
                       for u in r.get("nonResourceURLs", [])):
                    return True
                continue
            if not ({"*", attrs.get("group", "")} & set(r.get("apiGroups", []))):
                continue
            if not ({"*", attrs.get("resource", "")} & set(r.get("resources", []))):
                continue
            if "namespaces" in r and attrs.get("namespace", "") not in r["namespaces"]:
                continue
            names = r.get("resourceNames")
            if names and attrs.get("name", "") not in names:
                continue
            return True
        return False

    def rbac_objects_allow(self, user, groups, attrs):
        """kube-apiserver's RBAC authorizer over the stored RBAC objects."""
        st = self.srv.store
        objs = {}
        with st.lock:
            for p in ("roles", "clusterroles", "rolebindings", "clusterrolebindings"):
                objs[p] = dict(st.objects.get(p, {}))
        ns = attrs.get("namespace", "")

        def bound(b, bns):
            for sj in b.get("subjects") or []:
                k = sj.get("kind")
                if k == "User" and sj.get("name") == user:
                    return True
                if k == "Group" and sj.get("name") in groups:
                    return True
                if k == "ServiceAccount" and user == "system:serviceaccount:%s:%s" % (
                        sj.get("namespace") or bns, sj.get("name")):
                    return True
            return False

        def rule_ok(r):
            res = attrs.get("resource", "")
            if attrs.get("subresource"):
                res += "/" + attrs["subresource"]
            return (({"*", attrs.get("verb", "")} & set(r.get("verbs") or [])) and
                    ({"*", attrs.get("group", "")} & set(r.get("apiGroups") or [])) and
                    ({"*", res} & set(r.get("resources") or [])) and
                    (not r.get("resourceNames") or attrs.get("name", "") in r["resourceNames"]))

        def role_rules(ref, bns):
            if ref.get("kind") == "ClusterRole":
                o = objs["clusterroles"].get(("", ref.get("name")))
            else:
                o = objs["roles"].get((bns, ref.get("name")))
            return (o or {}).get("rules") or []

        for b in objs["clusterrolebindings"].values():
            if bound(b, "") and any(rule_ok(r) for r in role_rules(b.get("roleRef") or {}, "")):
                return True
        for (bns, _), b in objs["rolebindings"].items():
            if bns == ns and bound(b, bns) and \
                    any(rule_ok(r) for r in role_rules(b.get("roleRef") or {}, bns)):
                return True
        return False

    def decide(self, spec, user, groups):
        ra, na = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        if (ra is None) == (na is None):
            raise ApiError(422, "Invalid",
                           'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: '
                           'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified')
        if "system:masters" in groups:
            return {"allowed": True}
        if self.rbac_allows(user, groups, na or ra, na is not None):
            return {"allowed": True, "reason": "allowed by the test rules"}
        if ra is not None and self.rbac_objects_allow(user, groups, ra):
            return {"allowed": True, "reason": "allowed by the RBAC objects"}
        return {"allowed": False}

    def access_review(self):
        self.check_create("authorization.k8s.io", "subjectaccessreviews")
        o = self.review_object("SubjectAccessReview", "authorization.k8s.io")
        spec = o["spec"]
        if not spec.get("user") and not spec.get("groups"):
            raise ApiError(422, "Invalid",
                           'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: '
                           'Invalid value: "": at least one of user or group must be specified')
        o["status"] = self.decide(spec, spec.get("user", ""), spec.get("groups") or [])
        self.record_review(o)
        return self.send_json(201, o)

    def impersonated(self, u):
        """kubectl --as: an admin asking as someone else."""
        who = self.headers.get("Impersonate-User")
        if not who:
            return u
        if "system:masters" not in (u.get("groups") or []):
            raise ApiError(403, "Forbidden", f'users "{who}" is forbidden: User "{self.user}" '
                           'cannot impersonate resource "users" in API group "" at the cluster scope')
        groups = self.headers.get_all("Impersonate-Group") or []
        m = re.match(r"system:serviceaccount:([^:]+):[^:]+$", who)
        if m:
            groups = groups + ["system:serviceaccounts", "system:serviceaccounts:" + m.group(1)]
        return {"username": who, "groups": groups + ["system:authenticated"]}

    def self_access_review(self):
        o = self.review_object("SelfSubjectAccessReview", "authorization.k8s.io")
        u = self.impersonated(self.user_info())
        o["status"] = self.decide(o["spec"], u["username"], u.get("groups") or [])
        self.record_review(o)
        return self.send_json(201, o)

    def token_request(self, ns, name):
        st = self.srv.store
        with st.lock:
            if (ns, name) not in st.objects["serviceaccounts"]:
                raise ApiError(404, "NotFound", f'serviceaccounts "{name}" not found',
                               {"name": name, "kind": "serviceaccounts"})
        o = self.review_object("TokenRequest", "authentication.k8s.io")
        spec = o["spec"]
        exp = int(spec.get("expirationSeconds") or 3600)
        spec["expirationSeconds"] = exp
        spec["audiences"] = spec.get("audiences") or ["https://kubernetes.default.svc.cluster.local"]
        spec.setdefault("boundObjectRef", None)
        tok = "sa." + base64.urlsafe_b64encode(os.urandom(24)).decode().rstrip("=")
        with self.srv.mu:
            self.srv.authz["users"][tok] = {
                "username": f"system:serviceaccount:{ns}:{name}", "uid": str(uuid.uuid4()),
                "groups": ["system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated"],
                "audiences": spec["audiences"]}
        o["metadata"] = {"name": name, "namespace": ns, "creationTimestamp": now_iso()}
        until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=exp)
        o["status"] = {"token": tok, "expirationTimestamp": until.strftime("%Y-%m-%dT%H:%M:%SZ")}
        return self.send_json(201, o)

    def dispatch(self, method):
        self.nbytes = 0
        self.code = 0
        self.user = None
        ua = self.headers.get("User-Agent", "")
        entry = self.srv.begin(ua, method, self.path)
        try:
            # always consume the body: DELETE carries DeleteOptions
            self._body = self.read_body()
            self.route(method)
        except ApiError as e:
            self.send_json(e.code, e.status, e.headers)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True
        finally:
            self.srv.account(ua, method, self.path, self.code, self.nbytes,
                             self.user, entry)

    def route(self, method):
        u = urllib.parse.urlsplit(self.path)
        q = {k: v[-1] for k, v in urllib.parse.parse_qs(u.query, keep_blank_values=True).items()}
        self.user = self.authenticate()
        if self.user is None:
            raise ApiError(401, "Unauthorized", "Unauthorized")
        f = self.srv.take_fault(method, self.path)
        if f and f.get("mode", "http") == "http":
            hdr = {"Retry-After": f["retry_after"]} if "retry_after" in f else {}
            code = f.get("status", 500)
            reason = {429: "TooManyRequests", 410: "Expired", 500: "InternalError",
                      503: "ServiceUnavailable", 504: "Timeout"}.get(code, "InternalError")
            msg = {410: "too old resource version: 1 (2)"}.get(code, "injected fault")
            raise ApiError(code, reason, msg, headers=hdr)
        if f and f.get("mode") == "close":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        parts = [p for p in u.path.split("/") if p]
        if method == "POST" and parts == ["apis", "authentication.k8s.io", "v1", "tokenreviews"]:
            return self.token_review()
        if method == "POST" and parts == ["apis", "authorization.k8s.io", "v1", "subjectaccessreviews"]:
            return self.access_review()
        if method == "POST" and parts == ["apis", "authorization.k8s.io", "v1", "selfsubjectaccessreviews"]:
            return self.self_access_review()
        if (method == "POST" and len(parts) == 7 and parts[:3] == ["api", "v1", "namespaces"]
                and parts[4] == "serviceaccounts" and parts[6] == "token"):
            return self.token_request(parts[3], parts[5])
        if parts == ["version"]:
            return self.send_json(200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0-milometer-test",
                                        "platform": "linux/amd64"})
        if parts == ["healthz"] or parts == ["readyz"] or parts == ["livez"]:
            return self.send_json(200, "ok")
        if parts == ["api"]:
            return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": [
                                            {"clientCIDR": "0.0.0.0/0", "serverAddress": self.server.addr}]})
        if parts == ["apis"]:
            return self.send_json(200, self.group_list())
        if parts == ["openapi", "v3"]:
            return self.send_json(200, self.openapi_index())
        if len(parts) >= 3 and parts[:2] == ["openapi", "v3"]:
            return self.send_json(200, self.openapi_gv("/".join(parts[2:])))
        if parts == ["openapi", "v2"]:
            return self.send_openapi_v2()
        if parts and parts[0] == "openapi":
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if parts[:2] == ["api", "v1"]:
            return self.resource_req(method, "", "v1", parts[2:], q, f)
        if len(parts) == 2 and parts[0] == "apis":
            g = [x for x in self.group_list()["groups"] if x["name"] == parts[1]]
            if not g:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return self.send_json(200, dict(g[0], kind="APIGroup", apiVersion="v1"))
        if len(parts) >= 3 and parts[0] == "apis":
            return self.resource_req(method, parts[1], parts[2], parts[3:], q, f)
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    # kubectl (validate=strict) reads OpenAPI v3 to learn that the server
    # validates fields itself (fieldValidation on the patch operation); the
    # schemas here are permissive: this server does not validate fields.
    def openapi_index(self):
        paths = {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=1"}}
        for r in self.srv.store.res.values():
            if r.group and r.installed:
                k = f"apis/{r.group}/{r.version}"
                paths[k] = {"serverRelativeURL": f"/openapi/v3/{k}?hash=1"}
        return {"paths": paths}

    def openapi_gv(self, gv):
        paths, schemas = {}, {}
        for r in self.srv.store.res.values():
            if not r.installed or (f"apis/{r.group}/{r.version}" if r.group else "api/v1") != gv:
                continue
            base = f"/{gv}/" + ("namespaces/{namespace}/" if r.namespaced else "")
            param = [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}]
            op = {"parameters": param, "responses": {"200": {"description": "OK"}},
                  "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version,
                                                      "kind": r.kind}}
            paths[base + r.plural + "/{name}"] = {"get": op, "put": op, "patch": op, "delete": op}
            paths[base + r.plural] = {"get": op, "post": op}
            name = (r.group or "io.k8s.api.core") + "." + r.version + "." + r.kind
            schemas[name] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                             "x-kubernetes-group-version-kind": [
                                 {"group": r.group, "version": r.version, "kind": r.kind}]}
        if not paths:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"},
                "paths": paths, "components": {"schemas": schemas}}

    # kubectl 1.20 (Debian's kubernetes-client) validates with OpenAPI v2,
    # which it asks for as protobuf (gnostic's openapi_v2.Document); a kind
    # without a definition is not validated, as here.
    def send_openapi_v2(self):
        title, version = "Kubernetes", "v1.32.0"
        if "protobuf" in self.headers.get("Accept", ""):
            def field(num, data):
                return bytes([num << 3 | 2, len(data)]) + data
            info = field(1, title.encode()) + field(2, version.encode())
            body = field(1, b"2.0") + field(2, info)
            ctype = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
        else:
            body = json.dumps({"swagger": "2.0", "info": {"title": title, "version": version},
                               "paths": {}, "definitions": {}}).encode()
            ctype = "application/json"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.nbytes += len(body)
        self.srv.add_bytes(self.headers.get("User-Agent", ""), len(body))
        self.code = 200

    def group_list(self):
        groups = {}
        for r in self.srv.store.res.values():
            if not r.group or not r.installed:
                continue
            gv = {"groupVersion": r.api_version, "version": r.version}
            groups.setdefault(r.group, {"name": r.group, "versions": [gv],
                                        "preferredVersion": gv})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": list(groups.values())}

    def resource_list(self, group, version):
        out = []
        for r in self.srv.store.res.values():
            if r.group != group or r.version != version or not r.installed:
                continue
            verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
            short = {"namespaces": ["ns"], "pods": ["po"], "gateways": ["gtw"]}.get(r.plural)
            out.append({"name": r.plural, "singularName": r.kind.lower(), "namespaced": r.namespaced,
                        "kind": r.kind, "verbs": verbs, **({"shortNames": short} if short else {})})
            if r.status:
                out.append({"name": r.plural + "/status", "singularName": "", "namespaced": r.namespaced,
                            "kind": r.kind, "verbs": ["get", "patch", "update"]})
        if not out:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": f"{group}/{version}" if group else version, "resources": out}

    def resource_req(self, method, group, version, parts, q, fault):
        if not parts:
            return self.send_json(200, self.resource_list(group, version))
        ns = None
        if len(parts) >= 3 and parts[0] == "namespaces":
            ns, parts = parts[1], parts[2:]
        plural = parts[0]
        name = parts[1] if len(parts) > 1 else None
        sub = parts[2] if len(parts) > 2 else None
        st = self.srv.store
        res = st.res.get(plural)
        if (not res or res.group != group or res.version != version or not res.installed
                or (ns is not None and not res.namespaced) or (sub and sub != "status")
                or (sub == "status" and not res.status) or len(parts) > 3):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        watch = qbool(q.get("watch"))
        verb = {"GET": "watch" if watch else ("get" if name else "list"), "POST": "create",
                "PUT": "update", "PATCH": "patch",
                "DELETE": "delete"}[method]
        for u, v, g, r in self.srv.deny:
            if u == self.user and v in (verb, "*") and g == group and r in (plural, "*"):
                scope = f'in the namespace "{ns}"' if ns else "at the cluster scope"
                rname = plural + (("/" + sub) if sub else "")
                raise ApiError(403, "Forbidden",
                               f'{rname} is forbidden: User "{self.user}" cannot {verb} resource '
                               f'"{rname}" in API group "{group}" {scope}',
                               {"group": group, "kind": plural})
        if method == "GET" and not name:
            if watch:
                return self.watch(res, ns, q, fault)
            return self.list(res, ns, q)
        if method == "GET":
            return self.send_json(200, self.get(res, ns, name))
        if method == "POST" and not name:
            return self.create(res, ns, q)
        if method == "PUT" and name:
            return self.update(res, ns, name, sub, q)
        if method == "PATCH" and name:
            return self.patch(res, ns, name, sub, q)
        if method == "DELETE" and name:
            return self.delete(res, ns, name)
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def key(self, res, ns, name):
        return (ns or "" if res.namespaced else "", name)

    def get(self, res, ns, name):
        st = self.srv.store
        with st.lock:
            o = st.objects[res.plural].get(self.key(res, ns, name))
            if not o:
                raise ApiError(404, "NotFound", f'{res.plural}.{res.group} "{name}" not found'
                               if res.group else f'{res.plural} "{name}" not found',
                               {"name": name, "group": res.group, "kind": res.plural})
            return copy.deepcopy(o)

    # -- list --
    def list(self, res, ns, q):
        st = self.srv.store
        lsel = parse_label_selector(q.get("labelSelector", ""))
        fsel = parse_field_selector(q.get("fieldSelector", ""), res)
        limit = int(q.get("limit") or 0)
        cont = q.get("continue")
        rvm = q.get("resourceVersionMatch")
        if rvm and "resourceVersion" not in q:
            raise ApiError(422, "Invalid", "resourceVersionMatch is forbidden unless resourceVersion is provided")
        if cont and q.get("resourceVersion") not in (None, ""):
            raise ApiError(422, "Invalid", "specifying resource version is not allowed when using continue")
        with st.lock:
            if cont:
                try:
                    tok = json.loads(base64.b64decode(cont))
                except Exception:
                    raise ApiError(400, "BadRequest", "invalid continue token")
                snap = st.snapshots.get(tok["id"])
                if not snap or tok["rv"] <= st.floor:
                    raise ApiError(410, "Expired",
                                   "The provided continue parameter is too old to display a consistent list result. "
                                   "You can start a new list without the continue parameter.")
                rv, items = snap[0], snap[1]
                start = tok["off"]
            else:
                rv = st.rv
                items = sorted((o for (k_ns, _), o in st.objects[res.plural].items()
                                if (ns is None or k_ns == ns)),
                               key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
                items = [clean_for_list(res, o) for o in items
                         if label_match(lsel, o) and field_match(fsel, o)]
                start = 0
            meta = {"resourceVersion": str(rv)}
            page = items[start:start + limit] if limit else items[start:]
            if limit and start + limit < len(items):
                sid = tok["id"] if cont else uuid.uuid4().hex
                st.snapshots[sid] = (rv, items, time.time())
                meta["continue"] = base64.b64encode(json.dumps(
                    {"id": sid, "rv": rv, "off": start + limit}).encode()).decode()
                meta["remainingItemCount"] = len(items) - start - limit
            # continue tokens live ~5 minutes (etcd compaction)
            for k in [k for k, v in st.snapshots.items() if time.time() - v[2] > 300]:
                del st.snapshots[k]
        self.send_json(200, {"kind": res.kind + "List", "apiVersion": res.api_version,
                             "metadata": meta, "items": page})

    # -- watch --
    def write_chunk(self, data):
        if not data:
            return
        n = self.srv.split
        if n > 0:
            i = 0
            while i < len(data):
                k = random.randint(1, n)
                piece = data[i:i + k]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                i += k
        else:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.nbytes += len(data)
        self.srv.add_bytes(self.headers.get("User-Agent", ""), len(data))

    def event(self, typ, obj):
        self.write_chunk(json.dumps({"type": typ, "object": obj}).encode() + b"\n")

    def watch(self, res, ns, q, fault):
        st = self.srv.store
        lsel = parse_label_selector(q.get("labelSelector", ""))
        fsel = parse_field_selector(q.get("fieldSelector", ""), res)
        bookmarks = qbool(q.get("allowWatchBookmarks"))
        if "resourceVersionMatch" in q and q.get("sendInitialEvents") != "true":
            raise ApiError(422, "Invalid", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")
        if "sendInitialEvents" in q and qbool(q["sendInitialEvents"]):
            raise ApiError(422, "Invalid", "sendInitialEvents is not supported by this test server (WatchList off)")
        timeout = int(q.get("timeoutSeconds") or 0) or random.randint(1800, 3600)
        deadline = time.monotonic() + timeout
        rvq = q.get("resourceVersion", "")

        def visible(o):
            return o is not None and (ns is None or o["metadata"].get("namespace", "") == ns) \
                and label_match(lsel, o) and field_match(fsel, o)

        if fault and fault.get("mode") == "stream_gone":
            expired = True
        else:
            expired = False
        with st.lock:
            kill_gen, close_gen = st.kill_gen, st.close_gen
            if rvq in ("", "0"):
                initial = [o for o in st.objects[res.plural].values() if visible(o)]
                pos = len(st.history)
                cur_rv = st.rv
            else:
                try:
                    want = int(rvq)
                except ValueError:
                    raise ApiError(400, "BadRequest", f"invalid resource version: {rvq}")
                initial = []
                if want < st.floor:
                    expired = True
                pos = len(st.history)
                for i, h in enumerate(st.history):
                    if h[0] > want:
                        pos = i
                        break
                cur_rv = want
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.code = 200
        with self.srv.mu:
            self.srv.wid += 1
            wid = self.srv.wid
            self.srv.watches[wid] = {"resource": res.plural, "query": q, "user": self.user}
        try:
            if expired:
                # the watch cache's answer to a too-old RV (cacher.go newErrWatcher)
                self.event("ERROR", status_obj(410, "Expired",
                                               f"too old resource version: {rvq} ({st.floor + 1})"))
                self.wfile.write(b"0\r\n\r\n")
                return
            for o in initial:
                self.event("ADDED", o)
            last_bm = time.monotonic()
            while True:
                out = []
                with st.lock:
                    if st.kill_gen != kill_gen:
                        out = None
                    elif st.close_gen != close_gen:
                        self.close_connection = True
                        return
                    else:
                        while pos < len(st.history):
                            out.append(st.history[pos])
                            pos += 1
                        if not out:
                            rem = deadline - time.monotonic()
                            nb = last_bm + st.bookmark_interval - time.monotonic()
                            st.lock.wait(max(0.01, min(rem, nb if bookmarks else rem, 1.0)))
                    latest = st.rv
                if out is None:
                    self.event("ERROR", status_obj(410, "Expired",
                                                   f"too old resource version: {cur_rv} ({latest})"))
                    break
                for rv, plural, typ, obj, prev in out:
                    cur_rv = rv
                    if plural != res.plural:
                        continue
                    now_v, was_v = visible(obj), visible(prev)
                    if typ == "MODIFIED":
                        if now_v and not was_v:
                            typ = "ADDED"
                        elif was_v and not now_v:
                            typ = "DELETED"
                        elif not now_v:
                            continue
                    elif not now_v:
                        continue
                    self.event(typ, obj)
                now = time.monotonic()
                if now >= deadline:
                    if bookmarks:
                        self.bookmark(res, cur_rv if cur_rv else latest)
                    break
                if bookmarks and now - last_bm >= st.bookmark_interval:
                    self.bookmark(res, latest)
                    last_bm = now
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True
        finally:
            with self.srv.mu:
                self.srv.watches.pop(wid, None)

    def bookmark(self, res, rv):
        self.event("BOOKMARK", {"kind": res.kind, "apiVersion": res.api_version,
                                "metadata": {"resourceVersion": str(rv)}})

    # -- writes --
    def read_obj(self, ctype=None):
        raw = self.body()
        ctype = ctype or self.headers.get("Content-Type", "application/json")
        if "protobuf" in ctype:
            # the real server speaks protobuf for built-in types; this one not
            raise ApiError(415, "UnsupportedMediaType",
                           "this test server accepts JSON and YAML bodies only (no protobuf)")
        try:
            if "yaml" in ctype and yaml:
                return yaml.safe_load(raw)
            return json.loads(raw)
        except Exception as e:
            raise ApiError(400, "BadRequest", f"the body of the request could not be decoded: {e}")

    def check_dry_run(self, q):
        return q.get("dryRun") == "All"

    def store_write(self, res, key, new, prev, typ, dry):
        st = self.srv.store
        if dry:
            new["metadata"]["resourceVersion"] = str(st.rv)
            return new
        rv = st.next_rv()
        new["metadata"]["resourceVersion"] = str(rv)
        if typ == "DELETED":
            st.objects[res.plural].pop(key, None)
        else:
            st.objects[res.plural][key] = new
        st.record(res.plural, typ, copy.deepcopy(new), prev)
        return copy.deepcopy(new)

    def create(self, res, ns, q):
        obj = self.read_obj()
        st = self.srv.store
        if not isinstance(obj, dict) or not obj.get("metadata", {}).get("name"):
            raise ApiError(422, "Invalid", f'{res.kind} "" is invalid: metadata.name: Required value: name is required')
        m = obj["metadata"]
        if res.namespaced:
            if m.get("namespace") and ns and m["namespace"] != ns:
                raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request")
            m["namespace"] = ns or m.get("namespace") or "default"
        else:
            m.pop("namespace", None)
        key = self.key(res, m.get("namespace"), m["name"])
        with st.lock:
            if res.namespaced and ("", m["namespace"]) not in st.objects["namespaces"]:
                raise ApiError(404, "NotFound", f'namespaces "{m["namespace"]}" not found',
                               {"name": m["namespace"], "kind": "namespaces"})
            if key in st.objects[res.plural]:
                raise ApiError(409, "AlreadyExists", f'{res.plural} "{m["name"]}" already exists',
                               {"name": m["name"], "group": res.group, "kind": res.plural})
            obj["apiVersion"], obj["kind"] = res.api_version, res.kind
            m["uid"] = str(uuid.uuid4())
            m["creationTimestamp"] = now_iso()
            m["generation"] = 1
            m.pop("resourceVersion", None)
            if res.status and q.get("_keep_status") != "1":
                obj.pop("status", None)
            out = self.store_write(res, key, obj, None, "ADDED", self.check_dry_run(q))
        self.send_json(201, out)

    def finish_update(self, res, key, old, new, sub, dry, status_only_ok=True):
        """Common path of PUT and PATCH: subresource rules, generation, RV."""
        m = new.setdefault("metadata", {})
        for k in ("uid", "creationTimestamp", "name", "namespace"):
            if k in old["metadata"]:
                m[k] = old["metadata"][k]
            else:
                m.pop(k, None)
        new["apiVersion"], new["kind"] = res.api_version, res.kind
        if res.status:
            if sub == "status":
                # /status changes status only
                keep = {k: v for k, v in old.items() if k != "status"}
                keep["metadata"] = dict(old["metadata"], **{
                    k: v for k, v in m.items() if k in ("managedFields",)})
                if "status" in new:
                    keep["status"] = new["status"]
                new = keep
            elif "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        gen = old["metadata"].get("generation", 1)
        if spec_part(new) != spec_part(old):
            gen += 1
        new["metadata"]["generation"] = gen
        new["metadata"].pop("resourceVersion", None)
        if new == dict(old, metadata={k: v for k, v in old["metadata"].items() if k != "resourceVersion"}):
            # a no-op write changes nothing, not even the resourceVersion
            return copy.deepcopy(old)
        return self.store_write(res, key, new, old, "MODIFIED", dry)

    def check_rv(self, obj, old):
        want = (obj.get("metadata") or {}).get("resourceVersion")
        if want and want != old["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict",
                           f'Operation cannot be fulfilled on {old["kind"].lower()}s "{old["metadata"]["name"]}": '
                           "the object has been modified; please apply your changes to the latest version and try again")

    def update(self, res, ns, name, sub, q):
        obj = self.read_obj()
        st = self.srv.store
        key = self.key(res, ns, name)
        with st.lock:
            old = st.objects[res.plural].get(key)
            if not old:
                raise ApiError(404, "NotFound", f'{res.plural} "{name}" not found',
                               {"name": name, "group": res.group, "kind": res.plural})
            self.check_rv(obj, old)
            out = self.finish_update(res, key, old, obj, sub, self.check_dry_run(q))
        self.send_json(200, out)

    def patch(self, res, ns, name, sub, q):
        ctype = self.headers.get("Content-Type", "").split(";")[0].strip()
        st = self.srv.store
        key = self.key(res, ns, name)
        if ctype == "application/strategic-merge-patch+json" and res.crd:
            raise ApiError(415, "UnsupportedMediaType",
                           "the body of the request was in an unknown format - accepted media types include: "
                           "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
        if ctype not in ("application/merge-patch+json", "application/strategic-merge-patch+json",
                         "application/apply-patch+yaml"):
            raise ApiError(415, "UnsupportedMediaType", f"unsupported patch type {ctype}")
        patch = self.read_obj(ctype)
        if not isinstance(patch, dict):
            raise ApiError(400, "BadRequest", "patch must be an object")
        with st.lock:
            old = st.objects[res.plural].get(key)
            if ctype == "application/apply-patch+yaml":
                return self.apply(res, ns, name, sub, q, patch, old, key)
            if not old:
                raise ApiError(404, "NotFound", f'{res.plural} "{name}" not found',
                               {"name": name, "group": res.group, "kind": res.plural})
            self.check_rv(patch, old)
            new = merge_patch(copy.deepcopy(old), patch)
            out = self.finish_update(res, key, old, new, sub, self.check_dry_run(q))
        self.send_json(200, out)

    def apply(self, res, ns, name, sub, q, cfg, old, key):
        mgr = q.get("fieldManager")
        if not mgr:
            raise ApiError(422, "Invalid", "PATCH /: fieldManager: Required value: is required for apply patch")
        force = qbool(q.get("force"))
        if cfg.get("kind") != res.kind or cfg.get("apiVersion") != res.api_version:
            raise ApiError(400, "BadRequest", f"apply patch must name kind {res.kind} and apiVersion {res.api_version}")
        if (cfg.get("metadata") or {}).get("name") not in (None, name):
            raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
        subres = "status" if sub == "status" else ""
        if sub == "status":
            cfg = {k: v for k, v in cfg.items() if k in ("apiVersion", "kind", "metadata", "status")}
        elif res.status:
            cfg = {k: v for k, v in cfg.items() if k != "status"}
        mine = field_paths(cfg)
        created = old is None
        if created:
            if sub == "status":
                raise ApiError(404, "NotFound", f'{res.plural} "{name}" not found')
            old = {"apiVersion": res.api_version, "kind": res.kind,
                   "metadata": {"name": name, "uid": str(uuid.uuid4()),
                                "creationTimestamp": now_iso(), "generation": 1,
                                "resourceVersion": "0"}}
            if res.namespaced:
                old["metadata"]["namespace"] = ns or "default"
        mf = old["metadata"].get("managedFields") or []
        owned = {(e["manager"], e.get("subresource", "")): decode_fields(e.get("fieldsV1", {}))
                 for e in mf if e.get("operation") == "Apply"}
        conflicts = []
        for (om, osub), paths in owned.items():
            if (om, osub) == (mgr, subres):
                continue
            for p in paths & mine:
                if get_path(old, p) != get_path(cfg, p) and not p[-1].startswith("k:"):
                    conflicts.append((om, p))
        if conflicts and not force:
            msg = "; ".join(f'conflict with "{m}": {path_str(p)}' for m, p in conflicts)
            raise ApiError(409, "Conflict", f"Apply failed with {len(conflicts)} conflict(s): {msg}",
                           {"causes": [{"reason": "FieldManagerConflict",
                                        "message": f'conflict with "{m}"', "field": path_str(p)}
                                       for m, p in conflicts]})
        new = copy.deepcopy(old)
        prev_mine = owned.get((mgr, subres), set())
        others = set()
        for k, paths in owned.items():
            if k != (mgr, subres):
                if force:
                    paths -= mine
                others |= paths
        for p in sorted(prev_mine - mine - others, key=len, reverse=True):
            del_path(new, p)
        body = {k: v for k, v in cfg.items() if k not in ("apiVersion", "kind")}
        body["metadata"] = {k: v for k, v in (cfg.get("metadata") or {}).items()
                            if k in ("labels", "annotations")}
        merge_apply(new, body)
        entries = []
        for (om, osub), paths in owned.items():
            if (om, osub) == (mgr, subres) or not paths:
                continue
            if force:
                paths = paths - mine
            entries.append({"manager": om, "operation": "Apply", "apiVersion": res.api_version,
                            "time": now_iso(), "fieldsType": "FieldsV1",
                            "fieldsV1": encode_fields(paths), **({"subresource": osub} if osub else {})})
        prev_entry = [e for e in mf if e.get("manager") == mgr and e.get("subresource", "") == subres]
        entry = {"manager": mgr, "operation": "Apply", "apiVersion": res.api_version,
                 "time": now_iso(), "fieldsType": "FieldsV1", "fieldsV1": encode_fields(mine),
                 **({"subresource": subres} if subres else {})}
        if prev_entry and prev_entry[0]["fieldsV1"] == entry["fieldsV1"]:
            entry["time"] = prev_entry[0]["time"]
        entries.append(entry)
        entries += [e for e in mf if e.get("operation") != "Apply"]
        new["metadata"]["managedFields"] = entries
        if created:
            new["metadata"].pop("resourceVersion", None)
            out = self.store_write(res, key, new, None, "ADDED", self.check_dry_run(q))
            return self.send_json(201, out)
        out = self.finish_update(res, key, old, new, sub, self.check_dry_run(q))
        self.send_json(200, out)

    def delete(self, res, ns, name):
        st = self.srv.store
        key = self.key(res, ns, name)
        with st.lock:
            old = st.objects[res.plural].get(key)
            if not old:
                raise ApiError(404, "NotFound", f'{res.plural} "{name}" not found',
                               {"name": name, "group": res.group, "kind": res.plural})
            out = self.store_write(res, key, copy.deepcopy(old), old, "DELETED", False)
        self.send_json(200, out)


class CtlHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    srv = None

    def log_message(self, fmt, *a):
        pass

    def reply(self, obj, code=200):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        s = self.srv
        if self.path == "/ctl/stats":
            with s.mu:
                return self.reply(s.stats)
        if self.path == "/ctl/requests":
            with s.mu:
                return self.reply(s.requests)
        if self.path == "/ctl/watches":
            with s.mu:
                return self.reply(list(s.watches.values()))
        if self.path == "/ctl/reviews":
            with s.mu:
                return self.reply(s.reviews)
        if self.path == "/ctl/authz":
            with s.mu:
                return self.reply(s.authz)
        if self.path == "/ctl/rv":
            return self.reply({"rv": s.store.rv, "floor": s.store.floor})
        self.reply({"error": "unknown"}, 404)

    def do_POST(self):
        s = self.srv
        st = s.store
        n = int(self.headers.get("Content-Length") or 0)
        d = json.loads(self.rfile.read(n) or b"{}")
        p = self.path
        if p == "/ctl/tokens":
            s.tokens = {t: u for t, u in s.tokens.items() if u != "admin"}
            for t in d["valid"]:
                s.tokens[t] = d.get("user", "admin")
        elif p == "/ctl/deny":
            s.deny.append((d["user"], d["verb"], d["group"], d["resource"]))
        elif p == "/ctl/allow":
            s.deny = [x for x in s.deny if x != (d["user"], d["verb"], d["group"], d["resource"])]
        elif p == "/ctl/fault":
            with s.mu:
                s.faults.append(d)
        elif p == "/ctl/authz":
            with s.mu:
                d.setdefault("users", {})
                d.setdefault("rules", [])
                # tokens issued by TokenRequest outlive a rule change
                for t, u in s.authz["users"].items():
                    if t.startswith("sa.") and t not in d["users"]:
                        d["users"][t] = u
                s.authz = d
        elif p == "/ctl/reviews":
            with s.mu:
                s.reviews = []
        elif p == "/ctl/split":
            s.split = int(d.get("max", 0))
        elif p == "/ctl/stats":
            with s.mu:
                s.stats = {}
                s.requests = []
        elif p == "/ctl/compact":
            with st.lock:
                st.floor = st.rv
                st.history = []
                st.snapshots = {}
                if d.get("kill_watches"):
                    st.kill_gen += 1
                st.lock.notify_all()
        elif p == "/ctl/close_watches":
            with st.lock:
                st.close_gen += 1
                st.lock.notify_all()
        elif p == "/ctl/crd":
            with st.lock:
                r = st.res[d["resource"]]
                r.installed = bool(d["installed"])
                st.crd_sync(r)
                if not r.installed:
                    # removing a CRD deletes its objects
                    for key, o in list(st.objects[r.plural].items()):
                        o = copy.deepcopy(o)
                        o["metadata"]["resourceVersion"] = str(st.next_rv())
                        del st.objects[r.plural][key]
                        st.record(r.plural, "DELETED", o, o)
                    st.close_gen += 1
                    st.lock.notify_all()
        elif p == "/ctl/objects":
            with st.lock:
                for o in d["objects"]:
                    r = [x for x in st.res.values() if x.kind == o["kind"]
                         and x.api_version == o["apiVersion"]][0]
                    m = o.setdefault("metadata", {})
                    if r.namespaced:
                        m.setdefault("namespace", "default")
                    key = (m.get("namespace", ""), m["name"])
                    old = st.objects[r.plural].get(key)
                    m["uid"] = old["metadata"]["uid"] if old else str(uuid.uuid4())
                    m["creationTimestamp"] = old["metadata"]["creationTimestamp"] if old else now_iso()
                    m["generation"] = old["metadata"].get("generation", 1) + 1 if old else 1
                    m["resourceVersion"] = str(st.next_rv())
                    st.objects[r.plural][key] = o
                    st.record(r.plural, "MODIFIED" if old else "ADDED", copy.deepcopy(o), old)
        elif p == "/ctl/delete":
            with st.lock:
                r = st.res[d["resource"]]
                key = (d.get("namespace", "") if r.namespaced else "", d["name"])
                o = st.objects[r.plural].pop(key, None)
                if o and d.get("silent"):
                    # an event lost to compaction: only a relist can see it
                    st.next_rv()
                elif o:
                    o = copy.deepcopy(o)
                    o["metadata"]["resourceVersion"] = str(st.next_rv())
                    st.record(r.plural, "DELETED", o, o)
        elif p == "/ctl/save":
            s.save()
        else:
            return self.reply({"error": "unknown"}, 404)
        self.reply({"ok": True, "rv": st.rv})


def pb_fields(b):
    """(field number, wire type, value) of one protobuf message."""
    i = 0
    while i < len(b):
        key, i = pb_varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = pb_varint(b, i)
        elif wt == 2:
            n, i = pb_varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type")
        yield f, wt, v


def pb_varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


RA_FIELDS = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource",
             6: "subresource", 7: "name"}


def decode_review(body, kind, group):
    """kubectl posts built-in types as protobuf (client-go's default): the
    "k8s\\0" envelope (runtime.Unknown: 2 raw), then the object with 2 spec.
    TokenRequest spec: 1 audiences, 4 expirationSeconds. (Self)SubjectAccess
    Review spec: 1 resourceAttributes (RA_FIELDS), 2 nonResourceAttributes
    (1 path, 2 verb). Enough for kubectl create token and auth can-i."""
    try:
        if not body.startswith(b"k8s\x00"):
            return None
        raw = next((v for f, wt, v in pb_fields(body[4:]) if f == 2 and wt == 2), b"")
        spec = {}
        for f, wt, v in pb_fields(raw):
            if f != 2 or wt != 2:
                continue
            for g, gwt, gv in pb_fields(v):
                if kind == "TokenRequest":
                    if g == 1 and gwt == 2:
                        spec.setdefault("audiences", []).append(gv.decode())
                    elif g == 4 and gwt == 0:
                        spec["expirationSeconds"] = gv
                elif g in (1, 2) and gwt == 2:
                    names = RA_FIELDS if g == 1 else {1: "path", 2: "verb"}
                    spec["resourceAttributes" if g == 1 else "nonResourceAttributes"] = {
                        names[h]: hv.decode() for h, hwt, hv in pb_fields(gv)
                        if h in names and hwt == 2}
        return {"apiVersion": group + "/v1", "kind": kind, "spec": spec}
    except (ValueError, IndexError, UnicodeDecodeError, StopIteration):
        return None


def make_ssl(args):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    if args.client_ca:
        ctx.load_verify_locations(args.client_ca)
        ctx.verify_mode = ssl.CERT_OPTIONAL
    # kubectl and libcurl both speak HTTP/1.1 here; no h2
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


class TLSServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr, handler, ctx):
        super().__init__(addr, handler)
        self.ctx = ctx
        self.addr = f"{addr[0]}:{addr[1]}"

    def get_request(self):
        sock, addr = self.socket.accept()
        sock.settimeout(30)
        try:
            ssock = self.ctx.wrap_socket(sock, server_side=True)
        except (ssl.SSLError, OSError):
            sock.close()
            raise OSError("tls handshake failed")
        ssock.settimeout(None)
        return ssock, addr

    def handle_error(self, request, client_address):
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--listen", default="127.0.0.1:6443")
    ap.add_argument("--ctl", default="127.0.0.1:6444")
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--client-ca", help="accept client certificates signed by this CA (CN = user)")
    ap.add_argument("--token", action="append", default=[], help="admin bearer token (repeatable)")
    ap.add_argument("--user-token", action="append", help="TOKEN=USER")
    ap.add_argument("--deny", action="append", help="USER:VERB:GROUP:RESOURCE")
    ap.add_argument("--authz", help="JSON file: tokens -> users and the rules reviews are decided by (AUTHZ)")
    ap.add_argument("--state", help="keep objects and RVs in this file across restarts")
    ap.add_argument("--bookmark-interval", type=float, default=60.0)
    ap.add_argument("--objects", help="JSON file of objects to create at start")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--deploy-kinds", action="store_true",
                    help="also serve the kinds deploy/ manifests use (DEPLOY_RESOURCES)")
    args = ap.parse_args()
    if args.deploy_kinds:
        RESOURCES.extend(r for r in DEPLOY_RESOURCES
                         if (r[0], r[2]) not in {(x[0], x[2]) for x in RESOURCES})

    s = Server(args)
    Handler.srv = s
    CtlHandler.srv = s
    if args.objects:
        with open(args.objects) as f:
            objs = json.load(f)
        with s.store.lock:
            for o in objs:
                r = [x for x in s.store.res.values() if x.kind == o["kind"]][0]
                m = o.setdefault("metadata", {})
                if r.namespaced:
                    m.setdefault("namespace", "default")
                m.update(uid=str(uuid.uuid4()), creationTimestamp=now_iso(), generation=1,
                         resourceVersion=str(s.store.next_rv()))
                s.store.objects[r.plural][(m.get("namespace", ""), m["name"])] = o
    h, p = args.listen.rsplit(":", 1)
    api = TLSServer((h, int(p)), Handler, make_ssl(args))
    ch, cp = args.ctl.rsplit(":", 1)
    ctl = ThreadingHTTPServer((ch, int(cp)), CtlHandler)
    ctl.daemon_threads = True

    def stop(*_):
        s.save()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    threading.Thread(target=ctl.serve_forever, daemon=True).start()

    def saver():
        while True:
            time.sleep(0.5)
            if s.store.dirty:
                s.save()

    if args.state:
        threading.Thread(target=saver, daemon=True).start()
    print(f"k8s test apiserver on https://{args.listen} (ctl http://{args.ctl})", flush=True)
    api.serve_forever()


if __name__ == "__main__":
    main()
