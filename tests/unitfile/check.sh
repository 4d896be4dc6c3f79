#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The systemd units: systemd-analyze verify is clean on the service and its
# socket, the hardening keeps the exposure systemd-analyze security reports
# at or below 2.0, and the socket is where and as the daemon makes it.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Verify against the binary just built, not an installed one.
sed "s|^ExecStart=/usr/sbin/hbmguardd|ExecStart=$TOP/build/hbmguardd|" \
	"$TOP/daemon/systemd/hbmguardd.service" >"$work/hbmguardd.service"
cp "$TOP/daemon/systemd/hbmguardd.socket" "$work/"
out=$(systemd-analyze verify --man=no "$work/hbmguardd.service" "$work/hbmguardd.socket" 2>&1) || true
if [ -n "$out" ]; then
	echo "systemd-analyze verify:" >&2
	echo "$out" >&2
	exit 1
fi
exposure=$(systemd-analyze security --offline=true "$work/hbmguardd.service" 2>&1 |
	sed -n 's/.*Overall exposure level for hbmguardd.service: \([0-9.]*\).*/\1/p')
# The socket unit against the daemon's own defaults: the path of
# ControlSocket= (HBM_CTL_SOCKET, daemon/ctl.h), the mode hbm_ctl_listen() sets, the
# name control.c asks sd_listen_fds_with_names() for, SO_PASSCRED.
sock=$TOP/daemon/systemd/hbmguardd.socket
default=$(sed -n 's/^#define HBM_CTL_SOCKET[[:space:]]*"\(.*\)".*$/\1/p' "$TOP/daemon/ctl.h")
mode=$(sed -n 's/^#define HBM_CTL_SOCKET_MODE[[:space:]]*\(0[0-7]*\).*$/\1/p' "$TOP/daemon/ctl.h")
name=$(sed -n 's/.*passed_socket("\([a-z]*\)").*/\1/p' "$TOP/daemon/control.c")
for want in "ListenSequentialPacket=$default" "SocketMode=$mode" "FileDescriptorName=$name" \
	PassCredentials=yes Accept=no Service=hbmguardd.service; do
	grep -qx "$want" "$sock" || { echo "hbmguardd.socket: no $want" >&2; exit 1; }
done
echo "hbmguardd.service: verify clean, exposure $exposure; hbmguardd.socket: verify clean, $default mode $mode"
awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 2.0) }' ||
	{ echo "exposure above 2.0" >&2; exit 1; }
