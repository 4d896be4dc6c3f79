#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check uapi/netlink/hbmguard.yaml: against the kernel's genetlink schema
with the kernel's own ynl library (which also resolves every reference), and
against uapi/linux/hbmguard.h, so that the spec and the C contract cannot
drift apart.

  tests/ynl/check_spec.py KERNEL_SOURCE_DIR
"""
import re
import sys
from pathlib import Path

import yaml

TOP = Path(__file__).resolve().parents[2]
SPEC = TOP / "uapi/netlink/hbmguard.yaml"
HEADER = TOP / "uapi/linux/hbmguard.h"


def c_enum(text, name):
    """The members of `enum name { ... }` with their values."""
    body = re.search(r"enum %s \{(.*?)\};" % name, text, re.S).group(1)
    values, value = {}, -1
    for line in body.splitlines():
        m = re.match(r"\s*(\w+)\s*(?:=\s*(\w+))?\s*,", line)
        if not m:
            continue
        value = int(m.group(2), 0) if m.group(2) else value + 1
        values[m.group(1)] = value
    return values


def c_name(prefix, yname):
    return prefix + yname.upper().replace("-", "_")


def main():
    failures = []
    spec = yaml.safe_load(SPEC.read_text())
    header = HEADER.read_text()

    if len(sys.argv) > 1:
        src = Path(sys.argv[1])
        sys.path.insert(0, str(src / "tools/net/ynl"))
        from lib import SpecFamily  # the kernel's ynl, as cli.py uses it
        family = SpecFamily(str(SPEC), str(src / "Documentation/netlink/genetlink.yaml"))
        print("ynl: spec loads and validates: %d operations, %d attribute sets"
              % (len(family.msgs), len(family.attr_sets)))

    attrs = c_enum(header, "hbmguard_attr")
    value = 0
    for a in spec["attribute-sets"][0]["attributes"]:
        value = a.get("value", value + 1)
        cname = c_name("HBMGUARD_A_", a["name"])
        if attrs.get(cname) != value:
            failures.append("attribute %s is %s in the spec, %s in the header"
                            % (a["name"], value, attrs.get(cname)))
    known = [n for n in attrs if not n.startswith("__") and not n.endswith("UNSPEC")]
    if len(spec["attribute-sets"][0]["attributes"]) != len(known):
        failures.append("the header has attributes the spec lacks")

    cmds = c_enum(header, "hbmguard_cmd")
    for i, op in enumerate(spec["operations"]["list"], start=1):
        cname = c_name("HBMGUARD_CMD_", op["name"])
        if cmds.get(cname) != i:
            failures.append("operation %s is %d in the spec, %s in the header"
                            % (op["name"], i, cmds.get(cname)))

    enums = {"page-state": ("hbmguard_page_state", "HBMGUARD_STATE_"),
             "source": ("hbmguard_source", "HBMGUARD_SOURCE_"),
             "health": ("hbmguard_health", "HBMGUARD_HEALTH_"),
             "device-kind": ("hbmguard_device_kind", "HBMGUARD_KIND_"),
             "path": ("hbmguard_path", "HBMGUARD_PATH_"),
             "event-type": ("hbmguard_event_type", "HBMGUARD_EVENT_")}
    for d in spec["definitions"]:
        if d["name"] not in enums:
            continue
        cenum, prefix = enums[d["name"]]
        values = c_enum(header, cenum)
        for i, entry in enumerate(d["entries"], start=d.get("value-start", 0)):
            if values.get(c_name(prefix, entry)) != i:
                failures.append("%s %s is %d in the spec, %s in the header"
                                % (d["name"], entry, i, values.get(c_name(prefix, entry))))

    groups = [g["name"] for g in spec["mcast-groups"]["list"]]
    if groups != ["events"] or 'HBMGUARD_GENL_MCGRP_EVENTS\t"events"' not in header:
        failures.append("multicast groups differ")

    for f in failures:
        print("FAIL:", f)
    print("ynl spec: %s" % ("ok" if not failures else "%d mismatches" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
