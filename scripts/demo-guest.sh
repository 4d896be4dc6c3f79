# SPDX-License-Identifier: GPL-2.0
# The demo, inside the guest (busybox sh).
say() { printf '\n\033[1m%s\033[0m\n' "$*"; }
run() { echo "# $*"; "$@"; }

say "Load the module: two simulated GPUs of 16 GiB HBM, 64 KiB pages"
run insmod /hbmguard.ko sim_devices=2 sim_hbm_mib=16384 sim_page_size=65536
run hbmctl status

hbmctl watch > /tmp/events &
watcher=$!

say "An uncorrectable ECC error on sim0 retires its page at once"
run hbmctl inject sim0 ue 0x12345678
run hbmctl translate sim0 0x12345678

say "Correctable errors fill a leaky bucket; at the threshold the page goes"
run hbmctl policy sim0 ce_threshold=10
run hbmctl inject sim0 ce 0x40000000 6
run hbmctl translate sim0 0x40000000
run hbmctl inject sim0 ce 0x40000000 4
run hbmctl translate sim0 0x40000000

say "Poison from memory_failure(); an operator retires a whole DRAM row"
run hbmctl inject sim1 poison 0x2000000
run hbmctl retire sim1 0x100000000 512K

say "Spares run out on sim1: what cannot be bypassed is FAILED, health RMA"
run hbmctl retire sim1 0x200000000 10M
run hbmctl devices

say "The bad-page tables"
run hbmctl pages sim0
run hbmctl pages sim1

say "What a non-root user may do: read, not change"
echo "operator:x:1000:1000::/:/bin/sh" >>/etc/passwd
echo "hbmguard:x:1000:" >>/etc/group
chown root:hbmguard /dev/hbmguard
run ls -l /dev/hbmguard
run su operator -c "hbmctl translate sim0 0x12345678"
run su operator -c "hbmctl retire sim0 0 64K"
echo "(exit status $?)"

say "Every change was an event, in order"
sleep 1
kill $watcher
cat /tmp/events

say "Unload: every allocation accounted for"
run rmmod hbmguard
dmesg | grep hbmguard | tail -n 3
