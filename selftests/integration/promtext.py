# SPDX-License-Identifier: Apache-2.0
"""Prometheus text format 0.0.4: parse samples, fetch a scrape, sum series.

Written against the exposition format spec, not against the agent's
output, so a malformed scrape fails here instead of being read leniently.
"""
import urllib.request


class ParseError(Exception):
    pass


def _parse_labels(s, i, line):
    """s[i] is just past '{'; returns (labels, index past '}')."""
    labels = {}
    while True:
        while i < len(s) and s[i] in " \t,":
            i += 1
        if i >= len(s):
            raise ParseError("unterminated labels: %r" % line)
        if s[i] == "}":
            return labels, i + 1
        j = s.index("=", i)
        name = s[i:j].strip()
        i = j + 1
        if s[i] != '"':
            raise ParseError("label value not quoted: %r" % line)
        i += 1
        val = []
        while s[i] != '"':
            if s[i] == "\\":
                nxt = s[i + 1]
                val.append({"n": "\n", "\\": "\\", '"': '"'}.get(nxt, "\\" + nxt))
                i += 2
            else:
                val.append(s[i])
                i += 1
        labels[name] = "".join(val)
        i += 1


def parse(text):
    """Returns a list of (name, labels dict, float value)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        i = 0
        while i < len(line) and line[i] not in "{ \t":
            i += 1
        name = line[:i]
        labels = {}
        if i < len(line) and line[i] == "{":
            labels, i = _parse_labels(line, i + 1, line)
        rest = line[i:].split()
        if not rest:
            raise ParseError("sample without value: %r" % line)
        v = rest[0]
        value = float({"+Inf": "inf", "-Inf": "-inf"}.get(v, v))
        out.append((name, labels, value))
    return out


def fetch(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def scrape(url):
    return parse(fetch(url))


def total(samples, name, **match):
    """Sum of every sample of `name` whose labels include `match`."""
    s = 0.0
    for n, labels, v in samples:
        if n != name:
            continue
        if all(labels.get(k) == w for k, w in match.items()):
            s += v
    return s


def names(samples):
    return sorted({n for n, _, _ in samples})
