#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test_translate_prometheus.sh with haproxy as the proxy.
TR_PROXY=haproxy exec bash "$(dirname "$0")/test_translate_prometheus.sh"
