#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Parse an exposition of hbmguardd with Debian's python3-prometheus-client,
its OpenMetrics parser (strict: it raises on anything the spec forbids) or
its text format parser, and print each family as "name type samples" for
tests/unit/check_metrics.c to look at.  Exit 1 with the parser's complaint.

    parse_exposition.py openmetrics|text FILE
"""
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
from prometheus_client.parser import text_string_to_metric_families as text_parse


def main():
    fmt, path = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    parse = om_parse if fmt == "openmetrics" else text_parse
    try:
        for fam in parse(text):
            names = sorted({s.name for s in fam.samples})
            print(fam.name, fam.type, fam.unit or "-", len(fam.samples), ",".join(names))
    except Exception as e:  # the parsers raise ValueError and others
        print("parse error: %s: %s" % (type(e).__name__, e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
