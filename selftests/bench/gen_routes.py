#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes N filler HTTPRoutes (one YAML file) for the bench's route-scale
rows: the bench's own routes (manifests/gateway.yaml) stay as they are and
wrk keeps hitting shop.example.com/api/items, so the requests hit one route
among N. One filler in ten shares the shop's hostname (more path entries
under the hostname wrk uses), the rest spread over 500 other hostnames.

  gen_routes.py N OUT.yaml
"""
import sys


def route(i):
    host = ("shop.example.com" if i % 10 == 0
            else "svc-%d.example.net" % (i % 500))
    return """---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: filler-%d
  namespace: bench
  creationTimestamp: "2024-02-01T00:00:00Z"
spec:
  parentRefs:
    - name: gw
      namespace: infra
  hostnames:
    - %s
  rules:
    - matches:
        - path:
            type: PathPrefix
            value: /p%d
      backendRefs:
        - name: svc-%d
          port: 80
status:
  conditions:
    - type: Accepted
      status: "True"
      reason: Accepted
""" % (i, host, i, i)


def main():
    if len(sys.argv) != 3 or not sys.argv[1].isdigit():
        sys.exit(__doc__)
    with open(sys.argv[2], "w") as f:
        for i in range(int(sys.argv[1])):
            f.write(route(i))


if __name__ == "__main__":
    main()
