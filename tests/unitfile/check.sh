#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The systemd unit: systemd-analyze verify is clean, and the hardening keeps
# the exposure systemd-analyze security reports at or below 2.0.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Verify against the binary just built, not an installed one.
sed "s|^ExecStart=/usr/sbin/hbmguardd|ExecStart=$TOP/build/hbmguardd|" \
	"$TOP/daemon/systemd/hbmguardd.service" >"$work/hbmguardd.service"
out=$(systemd-analyze verify --man=no "$work/hbmguardd.service" 2>&1) || true
if [ -n "$out" ]; then
	echo "systemd-analyze verify:" >&2
	echo "$out" >&2
	exit 1
fi
exposure=$(systemd-analyze security --offline=true "$work/hbmguardd.service" 2>&1 |
	sed -n 's/.*Overall exposure level for hbmguardd.service: \([0-9.]*\).*/\1/p')
echo "hbmguardd.service: verify clean, exposure $exposure"
awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 2.0) }' ||
	{ echo "exposure above 2.0" >&2; exit 1; }
