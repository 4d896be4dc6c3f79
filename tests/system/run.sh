#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Tier 3: hbmguard installed into a Debian bookworm system the way an
# operator installs it (make install DESTDIR=, make install-dkms), booted in
# qemu with systemd as init and a CPU-less NUMA node standing for HBM (its
# memory hot-added and onlined movable, as scripts/guest-run says why).
#
#   tests/system/run.sh KVER          the tests
#   tests/system/run.sh KVER bench    make bench's part: tests/system/bench.sh
#   tests/system/run.sh KVER ddp      the DDP job's checks, a boot of their own
#   tests/system/run.sh KVER demo     make demo's guest: tests/system/ddp_compare.sh;
#                                     its results land in build/demo/
#   tests/system/run.sh KVER nvml     boot 3's end alone: the NVIDIA GPUs' checks and
#                                     the README's commands
#   tests/system/run.sh KVER slurm    the Slurm drain's checks alone (boot 3's end)
#   tests/system/run.sh KVER cluster  two nodes, one job: two guests of the same
#                                     image (an overlay each) on a link of
#                                     their own, etcd in the first (guest.sh cluster)
#
# tests/system/guest.sh runs at each boot as a systemd service and prints
# TAP-like lines on the serial console.  The boots, on one disk image:
#   1. modules-load, the unit, the journal, restarts, reloads, bad input;
#      then a retire, acknowledged, and `systemctl reboot`
#   2. the table is back after the reboot; a retire is acknowledged and the
#      host kills qemu at once: a power cut
#   3. the table is back after the power cut; dkms install; NVIDIA GPUs
#      through NVML; hbmguardd.socket; poweroff
# The DDP job (make check runs it beside these, as its own boot: mode ddp).
# Any "not ok", a kernel WARN/BUG/Oops/leak, or a boot that does not reach
# its end fails the run.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
kver=${1:?usage: run.sh KVER [bench]}
mode=${2:-test}
# The vCPUs: one host thread for both (thread=single), for the reason
# scripts/guest-run gives; the bench's may be chosen, to compare where its
# journal latency waits (tests/bench/README.md).  It keeps thread=single: with
# a thread each, 6.1 booted and ran, but the guest was slower on a shared
# 2-core host and no wait shorter; with one vCPU the listener waits behind
# the daemon.
#   BENCH_TCG_THREAD=single|multi  qemu's TCG threads (default single)
#   BENCH_SMP=1|2                  vCPUs (default 2)
#   BENCH_PARTS=all|journal        journal: the journal latency and the
#                                  daemons at rest alone, minutes, not 12
tcg_thread=single smp=2
if [ "$mode" = bench ]; then
	tcg_thread=${BENCH_TCG_THREAD:-single} smp=${BENCH_SMP:-2}
	case $tcg_thread in single|multi) ;; *)
		echo "run.sh: BENCH_TCG_THREAD=$tcg_thread: single or multi" >&2; exit 2 ;; esac
	case $smp in 1|2) ;; *) echo "run.sh: BENCH_SMP=$smp: 1 or 2" >&2; exit 2 ;; esac
	case ${BENCH_PARTS:-all} in all|journal) ;; *)
		echo "run.sh: BENCH_PARTS=$BENCH_PARTS: all or journal" >&2; exit 2 ;; esac
fi

mkdir -p "$TOP/build/logs"
log=$TOP/build/logs/tier3-$mode-$kver.log
: >"$log"

tarball=$("$TOP/scripts/rootfs.sh" "$kver")
work=$(mktemp -d "$TOP/build/system.XXXXXX")
# KEEP=1 keeps the disk image and the consoles for a look afterwards.
trap '[ -n "${KEEP:-}" ] && echo "tier 3: kept $work" || rm -rf "$work"' EXIT
root=$work/root
mkdir "$root"
start=$(date +%s)
tar -xf "$tarball" -C "$root"

# hbmguard, as an operator installs it.  make install builds the module in
# the source tree, which another run (make check runs two at once) may be
# building or cleaning: one at a time.
if ! { flock 9 && make -s -C "$TOP" install DESTDIR="$root" PREFIX=/usr \
		KDIR="/usr/src/linux-headers-$kver" &&
	make -s -C "$TOP" install-dkms DESTDIR="$root" &&
	make -s -C "$TOP" clean-module; } >"$work/install.log" 2>&1 9>"$TOP/build/.install.lock"; then
	cat "$work/install.log" >&2
	exit 1
fi
# DKMS builds the module from /usr/src as a package's postinst would, in the
# image with its own dkms, compiler and headers: here, at the host's speed,
# not in the guest, where it took minutes under TCG.  The guest installs it
# (guest.sh phase 3).  A mount namespace of its own keeps /proc off the host.
if [ "$mode" = test ] && ! unshare --mount --propagation private sh -c '
	mount -t proc proc "$1/proc" &&
	chroot "$1" dkms add hbmguard/0.1 &&
	chroot "$1" dkms build hbmguard/0.1 -k "$2"' sh "$root" "$kver" >"$work/dkms.log" 2>&1; then
	cat "$work/dkms.log" >&2
	exit 1
fi
depmod -b "$root" "$kver"	# as a package's postinst would
systemctl --root="$root" enable hbmguardd.service >/dev/null 2>&1
# The console is the test's: a getty there would hang it up.
systemctl --root="$root" mask serial-getty@ttyS0.service >/dev/null 2>&1
journalctl --root="$root" --update-catalog

# What the node's administrator would add: simulated devices (no GPU here),
# and the test itself.
echo "options hbmguard sim_devices=4 sim_backed=1 sim_hbm_mib=64 sim_spare_pages=64" >"$root/etc/modprobe.d/hbmguard.conf"
# HBM exposed as memory: node 1 registered by hbmguardd from its configuration.
mkdir -p "$root/etc/hbmguard"
printf '[Range "hbm0"]\nNumaNode=1\n' >"$root/etc/hbmguard/hbmguardd.conf"
echo "/dev/vda / ext4 rw,errors=remount-ro 0 1" >"$root/etc/fstab"
echo hbmguard-test >"$root/etc/hostname"
mkdir -p "$root/var/log/journal"	# kept across boots, to look back
install -D -m 0755 "$TOP/tests/system/guest.sh" "$root/usr/local/lib/hbmguard-test/guest.sh"
install -D -m 0755 "$TOP/build/guest/hbmnl" "$root/usr/local/bin/hbmnl"
install -D -m 0755 "$TOP/tests/system/bench.sh" "$root/usr/local/lib/hbmguard-test/bench.sh"
install -D -m 0644 "$TOP/tests/bench/guard_step.py" \
	"$root/usr/local/lib/hbmguard-test/guard_step.py"
install -D -m 0644 "$TOP/tests/system/pyrank.py" "$root/usr/local/lib/hbmguard-test/pyrank.py"
for f in ctl_badinput.py ctl_socket.py train.py ddp_runs.py ddp_verdict.py ddp_report.py \
	cluster_verdict.py; do
	install -D -m 0644 "$TOP/tests/system/$f" "$root/usr/local/lib/hbmguard-test/$f"
done
install -D -m 0755 "$TOP/tests/system/ddp_compare.sh" "$root/usr/local/lib/hbmguard-test/ddp_compare.sh"
# The README's commands (guest.sh readme_commands): the README, the test,
# the spec its ynl command names and the kernel's ynl tool that reads it.
install -D -m 0644 "$TOP/README.md" "$root/usr/local/lib/hbmguard-test/README.md"
install -D -m 0644 "$TOP/tests/readme/readme.py" "$root/usr/local/lib/hbmguard-test/readme.py"
install -D -m 0644 "$TOP/uapi/netlink/hbmguard.yaml" \
	"$root/usr/local/lib/hbmguard-test/src/uapi/netlink/hbmguard.yaml"
mkdir -p "$root/usr/local/lib/hbmguard-test/ksrc/tools/net"
cp -r "$TOP/.cache/ynl/linux-source-6.12/tools/net/ynl" "$root/usr/local/lib/hbmguard-test/ksrc/tools/net/"
# NVIDIA GPUs without one (guest.sh nvml): the driver's character devices
# (tests/kmod/hbm_fake_nvdev.c) and the fake libnvidia-ml.so.1 that opens
# their nodes, with its scenario; put in place by the test, not here, so
# that the boots before it run as on a node without NVIDIA.
install -D -m 0644 "$TOP/build/$kver/testmods/hbm_fake_nvdev.ko" \
	"$root/usr/local/lib/hbmguard-test/nvml/hbm_fake_nvdev.ko"
install -D -m 0644 "$TOP/build/nvml/nodes/libnvidia-ml.so.1" \
	"$root/usr/local/lib/hbmguard-test/nvml/libnvidia-ml.so.1"
install -D -m 0644 "$TOP/tests/nvml/node.scn" "$root/usr/local/lib/hbmguard-test/nvml/node.scn"
install -D -m 0644 "$TOP/tests/system/hbmguard-test.service" \
	"$root/etc/systemd/system/hbmguard-test.service"
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf /etc/systemd/system/hbmguard-test.service \
	"$root/etc/systemd/system/multi-user.target.wants/hbmguard-test.service"
if [ "$mode" = ddp ] || [ "$mode" = demo ] || [ "$mode" = nvml ] || [ "$mode" = slurm ] ||
	[ "$mode" = cluster ]; then
	mkdir -p "$root/var/lib/hbmguard-test"
	echo "$mode" >"$root/var/lib/hbmguard-test/phase"
fi
# Debian's Prometheus server starts at boot; the metrics checks run one of
# their own (guest.sh), and the bench none, whose CPU it would share.
systemctl --root="$root" mask prometheus.service >/dev/null 2>&1
# etcd's package enables it; only the cluster's first node runs it, started
# by its test (guest.sh cluster).
systemctl --root="$root" disable etcd.service >/dev/null 2>&1
if [ "$mode" = bench ]; then
	# The unit as shipped; rasdaemon started by the bench itself.
	mkdir -p "$root/var/lib/hbmguard-test"
	echo bench >"$root/var/lib/hbmguard-test/phase"
	echo "${BENCH_PARTS:-all}" >"$root/var/lib/hbmguard-test/bench-parts"
	systemctl --root="$root" disable rasdaemon.service >/dev/null 2>&1
else
	systemctl --root="$root" mask rasdaemon.service >/dev/null 2>&1
	# A watchdog the test can wait out: the unit's own is 30 s.
	mkdir -p "$root/etc/systemd/system/hbmguardd.service.d"
	printf '[Service]\nWatchdogSec=5s\n' >"$root/etc/systemd/system/hbmguardd.service.d/test.conf"
fi

# Two nodes of one job (mode cluster): both boot this image, each on an
# overlay of its own (boot_cluster); what differs between them comes
# from their kernel command line (systemd.hostname=, kernel-command-line(7)
# of systemd 252) and the MAC address of their end of the link.
node_mac() { printf '52:54:00:77:00:%02x' "$1"; }
node_addr() { echo "10.77.0.$1"; }
if [ "$mode" = cluster ]; then
	# Each node's address on the link, by its MAC (systemd.network(5)).
	mkdir -p "$root/etc/systemd/network"
	for n in 1 2; do
		printf '[Match]\nMACAddress=%s\n\n[Network]\nAddress=%s/24\n' \
			"$(node_mac $n)" "$(node_addr $n)" >"$root/etc/systemd/network/50-node$n.network"
	done
	systemctl --root="$root" enable systemd-networkd.service >/dev/null 2>&1
	# etcd, started by node 1's test (guest.sh cluster): one member, its
	# clients served on the link, plain http.  The variables are etcd's
	# flags' (etcd-server 3.4.23's op-guide/configuration.md), read by its
	# unit from /etc/default/etcd; the unit names the member after the
	# host (ETCD_NAME=%H), which the initial cluster must name too.
	cat >"$root/etc/default/etcd" <<-EOF
	ETCD_NAME=node1
	ETCD_INITIAL_CLUSTER=node1=http://127.0.0.1:2380
	ETCD_LISTEN_PEER_URLS=http://127.0.0.1:2380
	ETCD_INITIAL_ADVERTISE_PEER_URLS=http://127.0.0.1:2380
	ETCD_LISTEN_CLIENT_URLS=http://$(node_addr 1):2379,http://127.0.0.1:2379
	ETCD_ADVERTISE_CLIENT_URLS=http://$(node_addr 1):2379
	EOF
	# Each node's hbmguardd on it, its node name its hostname (Node= unset).
	mkdir -p "$root/etc/hbmguard/hbmguardd.conf.d"
	printf '[Cluster]\nEndpoints=http://%s:2379\nAllowPlainHTTP=yes\n' "$(node_addr 1)" \
		>"$root/etc/hbmguard/hbmguardd.conf.d/60-cluster.conf"
	# What the node's administrator adds to the unit as shipped, which
	# allows no IP traffic (IPAddressDeny=any) and no IP socket: etcd's
	# address (systemd.resource-control(5): an allowed address wins over a
	# denied one) and the families to reach it (systemd.exec(5): lists
	# given more than once are merged).
	printf '[Service]\nRestrictAddressFamilies=AF_INET AF_INET6\nIPAddressAllow=%s\n' \
		"$(node_addr 1)" >"$root/etc/systemd/system/hbmguardd.service.d/60-cluster.conf"
	# Lighter guests: what the nodes do not use.
	for u in munge slurmctld slurmd; do
		systemctl --root="$root" mask $u.service >/dev/null 2>&1
	done
fi

disk=$work/disk.img
mke2fs -q -t ext4 -L root -d "$root" "$disk" 4G
kernel=$root/boot/vmlinuz-$kver
initrd=$root/boot/initrd.img-$kver
cp "$kernel" "$initrd" "$work/"
rm -rf "$root"
echo "tier 3: image ready in $(($(date +%s) - start))s"

# boot PHASE MARKER: boot the disk until the console shows MARKER (then
# kill qemu: a power cut) or qemu exits (a poweroff), within 1200 s: a
# hang's bound, not a speed test (phases 2 and 3, which builds the module
# with DKMS under TCG, outlasted the 600 s it was on a loaded 2-core host).
# The DDP job's boots (ddp, demo, bench) run several training jobs, each
# with a wall limit of its own (train.py --wall): 2400 s (ddp took 880-950 s
# beside one other guest, and more than 1200 s beside three).
# guest CONSOLE DRIVE APPEND [QEMU OPTION...]: start a guest in the
# background ($! its pid), booting the disk DRIVE (-drive's file= and
# format=), APPEND added to the kernel's command line.
guest() {
	local console=$1 drive=$2 append=$3
	shift 3
	: >"$console"
	# (the TCG threads: above; -erms, watchdog_thresh=60, rcu_cpu_stall_timeout=120:
	# scripts/guest-run says why)
	qemu-system-x86_64 -machine q35 -accel "tcg,thread=$tcg_thread" -cpu max,-erms -smp "$smp" \
		-m 1280,slots=1,maxmem=1536M \
		-object memory-backend-ram,id=sysmem,size=1280M \
		-object memory-backend-ram,id=hbmmem,size=256M \
		-numa node,nodeid=0,cpus=0-$((smp - 1)),memdev=sysmem -numa node,nodeid=1 \
		-device pc-dimm,id=hbm,memdev=hbmmem,node=1 \
		-kernel "$work/vmlinuz-$kver" -initrd "$work/initrd.img-$kver" \
		-append "console=ttyS0 root=/dev/vda rw loglevel=5 panic=-1 watchdog_thresh=60 rcupdate.rcu_cpu_stall_timeout=120 memhp_default_state=online_movable $append" \
		-drive "$drive,if=virtio,cache=writeback" "$@" \
		-nographic -monitor none -serial "file:$console" </dev/null >/dev/null 2>&1 &
}

# console_lines CONSOLE: a console into the log, and its test lines shown;
# without the terminal's escapes systemd's status lines leave on it (an "ok"
# after "\e[K" would not be seen, nor a "not ok")
console_lines() {
	tr -d '\r' <"$1" | sed -E 's/\x1b\[[0-9;?]*[A-Za-z]//g' | tee -a "$log" |
		grep -E '^(ok|not ok|#|\|) |@@PHASE|^@bench' || true
}

boot() {
	local phase=$1 marker=$2 console=$work/console-$1.log pid limit=1200 deadline
	case $phase in ddp|demo|bench) limit=2400 ;; esac
	deadline=$((SECONDS + limit))
	guest "$console" "file=$disk,format=raw" ""
	pid=$!
	while kill -0 $pid 2>/dev/null; do
		if [ -n "$marker" ] && grep -q "$marker" "$console"; then
			kill -9 $pid
			break
		fi
		sleep 0.2
		if [ $SECONDS -gt $deadline ]; then
			kill -9 $pid
			echo "tier 3: boot $phase timed out" >&2
			break
		fi
	done
	wait $pid 2>/dev/null || true
	console_lines "$console"
}

# boot_cluster: two guests of the image, each writing to a temporary
# overlay of its own (-drive snapshot=on: qemu-system-x86_64(1), -snapshot;
# in $work: TMPDIR), joined by a link of their own: qemu's socket netdev, a TCP
# connection over the host's 127.0.0.1 (qemu-system-x86_64(1) of qemu 7.2,
# -netdev socket: node 1 listens, node 2 connects), the addresses inside it
# the guests' own.  $work/share is a folder both see (-virtfs: 9p, "shared
# by several guests simultaneously", the same page), where each leaves
# what the other and the host read.  Until both powered off, within 2400 s.
boot_cluster() {
	local n port pids=() deadline=$((SECONDS + 2400)) link
	mkdir "$work/share"
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	for n in 1 2; do
		if [ $n = 1 ]; then
			link=listen=127.0.0.1:$port
		else
			# node 2's qemu connects at its start: node 1's must listen
			while ! ss -Hltn "sport = :$port" | grep -q .; do
				kill -0 "${pids[0]}" && [ $SECONDS -lt $deadline ] ||
					{ echo "tier 3 cluster: node 1's qemu did not listen" >&2; return 1; }
				sleep 0.2
			done
			link=connect=127.0.0.1:$port
		fi
		TMPDIR=$work guest "$work/console-node$n.log" "file=$disk,format=raw,snapshot=on" \
			"systemd.hostname=node$n" \
			-netdev "socket,id=link,$link" \
			-device "virtio-net-pci,netdev=link,mac=$(node_mac $n)" \
			-virtfs "local,path=$work/share,mount_tag=cluster,security_model=none"
		pids+=($!)
	done
	while kill -0 "${pids[0]}" 2>/dev/null || kill -0 "${pids[1]}" 2>/dev/null; do
		sleep 0.5
		if [ $SECONDS -gt $deadline ]; then
			kill -9 "${pids[@]}" 2>/dev/null
			echo "tier 3: the cluster's boot timed out" >&2
			break
		fi
	done
	wait "${pids[@]}" 2>/dev/null || true
	# what the nodes left there (their runs, journals), for a look afterwards
	rm -rf "$TOP/build/logs/tier3-cluster-share"
	cp -r "$work/share" "$TOP/build/logs/tier3-cluster-share"
	for n in 1 2; do
		echo "# node$n" | tee -a "$log"
		console_lines "$work/console-node$n.log"
	done
}

if [ "$mode" = bench ]; then
	echo "# bench guest: -accel tcg,thread=$tcg_thread -smp $smp; host load: $(cut -d' ' -f1-3 /proc/loadavg)" |
		tee -a "$log"
	boot bench ""
	echo "# host load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$log"
	grep -q '^@@PHASE bench done@@' "$log" || { echo "tier 3 bench: did not finish (see $log)" >&2; exit 1; }
	exit 0
fi

if [ "$mode" = demo ]; then
	boot demo ""
	grep -q '^@@PHASE demo done@@' "$log" || { echo "demo: the guest did not finish (see $log)" >&2; exit 1; }
	rm -rf "$TOP/build/demo"
	mkdir -p "$TOP/build/demo"
	debugfs -R "rdump /var/tmp/ddp $TOP/build/demo" "$disk" >/dev/null 2>&1
	exit 0
fi
# kernel_clean: no WARN, BUG, Oops, leak... in what the guests' kernels printed.
kernel_clean() {
	local bad='WARNING:|BUG[: ]|Oops|general protection|Kernel panic|Call Trace|[Ll]eak|refcount_t|UBSAN|KASAN'
	if grep -E '^\[ *[0-9]+\.[0-9]+\] ' "$log" | grep -E "$bad"; then
		echo "tier 3: the kernel log shows a problem (see $log)" >&2
		return 1
	fi
}

if [ "$mode" = ddp ]; then
	boot ddp ""
	grep -q '^@@PHASE ddp done@@' "$log" && ! grep -q '^not ok ' "$log" ||
		{ echo "tier 3 ddp: failed (see $log)" >&2; exit 1; }
	kernel_clean
	echo "== tier 3 ddp passed in $(($(date +%s) - start))s"
	exit 0
fi
if [ "$mode" = cluster ]; then
	boot_cluster
	for n in 1 2; do
		grep -q "^@@PHASE cluster node$n done@@" "$log" ||
			{ echo "tier 3 cluster: node$n did not finish (see $log)" >&2; exit 1; }
	done
	! grep -q '^not ok ' "$log" || { echo "tier 3 cluster: failed (see $log)" >&2; exit 1; }
	kernel_clean
	echo "== tier 3 cluster passed in $(($(date +%s) - start))s"
	exit 0
fi
if [ "$mode" = nvml ] || [ "$mode" = slurm ]; then
	boot $mode ""
	grep -q "^@@PHASE $mode done@@" "$log" && ! grep -q '^not ok ' "$log" ||
		{ echo "tier 3 $mode: failed (see $log)" >&2; exit 1; }
	kernel_clean
	echo "== tier 3 $mode passed in $(($(date +%s) - start))s"
	exit 0
fi

boot 1 "@@POWERCUT@@"	# phase 1 reboots into phase 2, which is cut
boot 2 ""			# phase 3 powers off

fails=$(grep -c '^not ok ' "$log" || true)
phases=$(grep -c '^@@PHASE [0-9] done@@' "$log" || true)
kernel_clean
if [ "$fails" != 0 ] || [ "$phases" != 3 ]; then
	echo "tier 3: $fails failed, $phases of 3 phases finished (see $log)" >&2
	exit 1
fi
echo "== tier 3 passed in $(($(date +%s) - start))s"
