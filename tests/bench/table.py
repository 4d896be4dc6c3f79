#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make bench's summary: one table of the figures the benchmarks measured,
each beside its anchor from the same run, and the same as JSON.

Every benchmark (in this machine, in the tier 2 guest, in the tier 3 guest)
prints its figures as lines

    @bench<TAB>figure<TAB>value<TAB>unit<TAB>anchor<TAB>anchor_value<TAB>goal

anchor and anchor_value are "-" where a figure has none.  The ratio is
value / anchor_value: goals are ratios within one run, because absolute
times in a TCG guest say little (see tests/bench/README.md).  Judged here:
a ratio, "<= Nx" or ">= Nx" (also within words: "flat (<= 2x)"); a bound
in the row's own unit, "<= 32 B" for a figure in B, ">= 10^6/s" for one in
something per second; and "0", a count that must be none.  Any other goal
is printed for the reader to judge.  Nothing here fails the build: make
bench measures, make check asserts.

usage: table.py LOG JSON
"""
import json
import re
import sys


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def bound(op, limit, v):
    if v is None:
        return "-"
    return "met" if (v <= limit if op == "<=" else v >= limit) else "NOT met"


def judge(goal, ratio, value, unit):
    m = re.search(r"(<=|>=)\s*([0-9.]+)x(?![\w^])", goal)
    if m:
        return bound(m.group(1), float(m.group(2)), ratio)
    m = re.fullmatch(r"\s*(<=|>=)\s*([0-9.]+)\s*(\S+)\s*", goal)
    if m and m.group(3) == unit:
        return bound(m.group(1), float(m.group(2)), value)
    m = re.match(r"\s*(<=|>=)\s*10\^([0-9]+)/s\b", goal)
    if m and unit.endswith("/s"):
        return bound(m.group(1), 10.0 ** int(m.group(2)), value)
    if goal.strip() == "0":
        return bound("<=", 0, value)
    return "-"


def rows(log):
    for line in log:
        at = line.find("@bench\t")
        if at < 0:
            continue
        fields = line[at:].rstrip("\r\n").split("\t")[1:]
        if len(fields) != 6:
            print("table.py: malformed row: %r" % line, file=sys.stderr)
            continue
        figure, value, unit, anchor, anchor_value, goal = fields
        v, a = number(value), number(anchor_value)
        ratio = v / a if v is not None and a else None
        yield {
            "figure": figure, "value": v, "unit": unit,
            "anchor": None if anchor == "-" else anchor, "anchor_value": a,
            "ratio": ratio, "goal": None if goal == "-" else goal,
            "verdict": judge(goal, ratio, v, unit),
        }


def fmt(v):
    if v is None:
        return "-"
    return "%.3g" % v if abs(v) < 100 else "%.0f" % v


def main():
    with open(sys.argv[1], errors="replace") as f:
        table = list(rows(f))
    w = max([len(r["figure"]) for r in table] + [6])
    aw = max([len(r["anchor"] or "-") for r in table] + [6])
    print("%-*s %10s %-8s  %-*s %10s %8s  %-14s %s" % (
        w, "figure", "value", "unit", aw, "anchor", "anchor", "ratio", "goal", ""))
    for r in table:
        print("%-*s %10s %-8s  %-*s %10s %8s  %-14s %s" % (
            w, r["figure"], fmt(r["value"]), r["unit"], aw, r["anchor"] or "-",
            fmt(r["anchor_value"]),
            "-" if r["ratio"] is None else "%.2fx" % r["ratio"],
            r["goal"] or "-", "" if r["verdict"] == "-" else r["verdict"]))
    with open(sys.argv[2], "w") as f:
        json.dump({"rows": table}, f, indent=1)
        f.write("\n")
    print("\n%d figures; the same in %s" % (len(table), sys.argv[2]))


if __name__ == "__main__":
    main()
