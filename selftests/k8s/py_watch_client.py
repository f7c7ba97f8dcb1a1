#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Debian's python3-kubernetes against the test API server: list, watch
(events in order, bookmarks), and a too-old resourceVersion answered by an
in-stream ERROR 410 that the client must surface as ApiException(410).
Prints one line per check; exit 1 on the first failure."""
import sys
import threading
import time
import urllib.request
import json

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

kubeconfig, ctl = sys.argv[1], sys.argv[2]


def ctlpost(path, body):
    req = urllib.request.Request(ctl + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req))


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


config.load_kube_config(config_file=kubeconfig)
co = client.CustomObjectsApi()
G, V, P = "gateway.networking.k8s.io", "v1", "httproutes"

lst = co.list_namespaced_custom_object(G, V, "apps", P)
rv = lst["metadata"]["resourceVersion"]
names = sorted(i["metadata"]["name"] for i in lst["items"])
print("list", names, "rv", rv)

seen = []


def watcher():
    w = watch.Watch()
    for ev in w.stream(co.list_namespaced_custom_object, G, V, "apps", P,
                       resource_version=rv, allow_watch_bookmarks=True,
                       timeout_seconds=5):
        seen.append((ev["type"], ev["object"]["metadata"].get("name")))
        if len(seen) >= 3:
            w.stop()


t = threading.Thread(target=watcher)
t.start()
time.sleep(0.5)
body = {"apiVersion": f"{G}/{V}", "kind": "HTTPRoute",
        "metadata": {"name": "py1", "namespace": "apps"}, "spec": {"hostnames": ["py.test"]}}
co.create_namespaced_custom_object(G, V, "apps", P, body)
co.patch_namespaced_custom_object(G, V, "apps", P, "py1", {"spec": {"hostnames": ["py2.test"]}})
co.delete_namespaced_custom_object(G, V, "apps", P, "py1")
t.join(10)
print("watch", seen)
if [s for s in seen if s[0] != "BOOKMARK"][:3] != [("ADDED", "py1"), ("MODIFIED", "py1"), ("DELETED", "py1")]:
    fail("watch events out of order or missing")

# a too-old RV: the server answers in the stream; the client must raise 410
ctlpost("/ctl/compact", {})
try:
    for ev in watch.Watch().stream(co.list_namespaced_custom_object, G, V, "apps", P,
                                   resource_version=rv, timeout_seconds=5):
        fail(f"an event instead of a 410: {ev['type']}")
    fail("the stream ended without the 410")
except ApiException as e:
    if e.status != 410:
        fail(f"status {e.status}, want 410")
    print("watch at a compacted RV: ApiException 410", e.reason)

# core: namespaces list with a label selector
v1 = client.CoreV1Api()
ns = v1.list_namespace(label_selector="team=a")
print("namespaces team=a", [n.metadata.name for n in ns.items])
if [n.metadata.name for n in ns.items] != ["apps"]:
    fail("label selector")
print("ok")
