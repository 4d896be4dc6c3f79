#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The half of scripts/gpu-check.sh that runs without a GPU: hbmnvml through
# the bundled loader (make gpu-bundle) against the fake libnvidia-ml.so.1 and
# tests/nvml/node.scn, its view exactly tests/nvml/node.view, its JSON the
# same facts; no nvidia-smi: exit 2, nothing compared; no library: exit 2.
# (The comparison with nvidia-smi is not tested here: no fake nvidia-smi is
# built, as nvidia-smi's text output has no published format to build it from.)
set -uo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "gpu-check-view: $*" >&2; cat "$out" >&2; exit 1; }

export HBM_FAKE_NVML=$TOP/tests/nvml/node.scn
NVML_LIB=$TOP/build/nvml/libnvidia-ml.so.1 NVIDIA_SMI=/nonexistent \
	"$TOP/scripts/gpu-check.sh" >"$out" 2>&1
rc=$?
[ $rc = 2 ] || fail "exit status $rc, not 2, without nvidia-smi"
grep -q '^== hbmnvml (bundled loader' "$out" || fail "the bundled loader was not used"
grep -q '^gpu-check: nvidia-smi not found' "$out" || fail "no nvidia-smi line"
grep -q 'DIFFERS\|agrees' "$out" && fail "compared without nvidia-smi"
sed -n '/^driver /,/^(hbmnvml exit status/p' "$out" | sed '$d' | diff -u "$TOP/tests/nvml/node.view" - ||
	fail "the view differs from tests/nvml/node.view"
grep -q '^(hbmnvml exit status 0)' "$out" || fail "hbmnvml failed"
sed -n '/^== hbmnvml --json/{n;p}' "$out" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
g = {x["uuid"]: x for x in d["gpus"]}
a = g["GPU-a1a1a1a1-0000-4000-8000-000000000001"]
h = g["GPU-h200h200-0000-4000-8000-000000000002"]
assert d["driver"] == "580.159.04"
assert a["pci"] == "00000000:3B:00.0" and a["memory"] == 85899345920
assert [p["address"] for p in a["retired_pages"]["multiple-sbe"]["pages"]] == [0x1a2b000, 0x1a2c000]
assert a["retired_pages"]["dbe"]["pages"] == [{"address": 0x3f00000, "timestamp": 1700000200}]
assert a["retired_pending"] == {"status": "ok", "pending": True}
assert a["remapped_rows"] == {"status": "ok", "corrected": 3, "uncorrected": 1,
                              "pending": False, "failure": False}
assert a["ecc"]["uncorrected_aggregate"] == 2
assert h["retired_pages"]["dbe"]["status"] == "not-supported"
assert h["remapped_rows"]["pending"] is True
' || fail "the JSON view is wrong"

NVML_LIB=/nonexistent/libnvidia-ml.so.1 "$TOP/scripts/gpu-check.sh" >"$out" 2>&1
rc=$?
[ $rc = 2 ] || fail "exit status $rc, not 2, without a library"
grep -q 'no NVIDIA management library' "$out" || fail "no line about the library"
echo "gpu-check view: ok"
