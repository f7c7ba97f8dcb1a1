#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes to a /status subresource with Debian's python3-kubernetes (its
ApiClient: kubeconfig, auth, TLS, the request), for the writes a kubectl
without --subresource (before 1.24; Debian 12 ships 1.20) cannot send:

  py_status_write.py KUBECONFIG apply PLURAL MANAGER FORCE(0|1) FILE
      server-side apply of FILE (application/apply-patch+yaml) on a
      cluster-scoped custom resource's
      /apis/G/V/PLURAL/NAME/status?fieldManager=MANAGER[&force=true]
  py_status_write.py KUBECONFIG merge PATH JSON
      a JSON merge patch on PATH (an object's /status URL path)

Exit 1 with the server's Status (reason, message) on an error."""
import json
import sys

import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException


def patch(api, path, ctype, body, query):
    return api.call_api(path, "PATCH", query_params=query,
                        header_params={"Content-Type": ctype, "Accept": "application/json"},
                        body=body, auth_settings=["BearerToken"],
                        response_type="object", _return_http_data_only=True)


def main():
    kubeconfig, op = sys.argv[1:3]
    cfg = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    # a tokenFile ending in a newline: client-go trims it, this client does not
    for k, v in cfg.api_key.items():
        cfg.api_key[k] = v.strip()
    api = client.ApiClient(cfg)
    try:
        if op == "apply":
            plural, manager, force, path = sys.argv[3:7]
            text = open(path).read()
            obj = yaml.safe_load(text)
            url = f"/apis/{obj['apiVersion']}/{plural}/{obj['metadata']['name']}/status"
            query = [("fieldManager", manager)] + ([("force", "true")] if force == "1" else [])
            # the YAML as written: apply-patch+yaml is sent as is
            patch(api, url, "application/apply-patch+yaml", text, query)
        elif op == "merge":
            url, body = sys.argv[3:5]
            patch(api, url, "application/merge-patch+json", json.loads(body), [])
        else:
            sys.exit(f"unknown operation {op}")
    except ApiException as e:
        try:
            st = json.loads(e.body)
            print(f"Error from server ({st.get('reason')}): {st.get('message')}")
        except (TypeError, ValueError):
            print(f"Error from server: {e.status} {e.reason}")
        sys.exit(1)


main()
