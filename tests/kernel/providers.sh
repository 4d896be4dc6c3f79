# SPDX-License-Identifier: GPL-2.0
# Tier 2, inside the guest: the provider API, EDAC's mc_event and the NVIDIA
# Xid tracepoint, driven by the test-only modules of tests/kmod.
. /lib.sh
prov=/sys/kernel/debug/hbm_test_provider/ctl
nv=/sys/kernel/debug/hbm_fake_nvidia/ctl

# NVIDIA Xids come by the driver's tracepoint nvidia:nvidia_dev_xid, which
# hbm_fake_nvidia declares from NVIDIA's own header and fires for one of the
# guest's real PCI devices (q35: 00:1f.0 the LPC bridge plays the GPU, 00:00.0
# the host bridge a GPU of no device).  Loaded first, it is one of the
# modules hbmguard finds already there.
check "fake nvidia loads" 'insmod /hbm_fake_nvidia.ko'
check "its event is nvidia:nvidia_dev_xid" 'mount -t tracefs nodev /sys/kernel/tracing && grep -q "Xid (PCI:%s): %u, %s" /sys/kernel/tracing/events/nvidia/nvidia_dev_xid/format'
check "load with path_nvidia=0" 'insmod /hbmguard.ko path_nvidia=0'
check "path_nvidia=0: not probed" '! dmesg | grep -q "receiving NVIDIA Xids"'
check "unload" 'rmmod hbmguard'
check "load with the driver already loaded" 'insmod /hbmguard.ko'
check "its tracepoint is probed" 'dmesg | grep -q "receiving NVIDIA Xids from nvidia:nvidia_dev_xid of hbm_fake_nvidia"'

# A GPU driver registers its device and reports through the provider API.
check "provider loads" 'insmod /hbm_test_provider.ko'
check "hbmguard pinned by its provider" '! rmmod hbmguard 2>/dev/null'
check "provider registers gpu0" 'echo "register gpu0 0000:00:1f.0 1073741824 4096 16" >$prov'
check "identity required to be unique" '! echo "register gpu1 0000:00:1f.0 1073741824 4096 16" >$prov 2>/dev/null'
check "gpu0 is a provider device" 'hbmnl devices | grep -q "^device 0 gpu0 0000:00:1f.0 kind=2 "'
hbmnl listen 6 8000 >/tmp/prov.events &
wait_for /tmp/prov.events listening
check "UE from process context" 'echo "report ue 0x1000 1 process" >$prov'
check "UE from under a spinlock" 'echo "report ue 0x2000 1 spinlock" >$prov'
check "poison from a timer" 'echo "report poison 0x3000 1 timer" >$prov'
wait
check "provider: three errors, three pages" '[ "$(grep -c "^event type=1 .* aux=1$" /tmp/prov.events)" = 3 ] && [ "$(grep -c "^event type=2 " /tmp/prov.events)" = 3 ]'
eventually "provider: pages retired" '[ "$(hbmctl pages gpu0 | grep -c retired)" = 3 ]'
check "provider: bad kind refused" '! echo "report frob 0x1000 1 process" >$prov 2>/dev/null'
check "provider: CE count refused above 65535" '! echo "report ce 0x1000 70000 process" >$prov 2>/dev/null'

# Device-level errors: Xids on the tracepoint, fired in atomic context.
hbmnl listen 3 8000 >/tmp/xid.events &
wait_for /tmp/xid.events listening
echo "xid 0000:00:1f.0 13" >$nv		# not an HBM Xid: ignored
echo "xid 0000:00:1f.0 48" >$nv
echo "xid 0000:00:1f.0 94" >$nv
echo "xid 0000:00:1f.0 95" >$nv
wait
check "Xid 48 is a device error" 'grep -q "^event type=11 .* dev=0 .* state=48 count=1 aux=5$" /tmp/xid.events'
check "Xid 94 is a device error" 'grep -q "^event type=11 .* dev=0 .* state=94 count=1 aux=5$" /tmp/xid.events'
check "Xid 95 is a device error" 'grep -q "^event type=11 .* dev=0 .* state=95 count=1 aux=5$" /tmp/xid.events'
check "Xid 13 is not" '! grep -q "state=13 " /tmp/xid.events'
echo "xid 0000:00:00.0 48" >$nv
eventually "Xid for a GPU of no device is dropped" 'hbmnl stats | grep -q "^path 5 received=3 dropped=1$"'
check "and logged" 'dmesg | grep -q "hbmguard: Xid 48 on 0000:00:00.0: no such device registered"'

# EDAC: ras:mc_event on a range of node 1, as a memory controller driver.
# (ras.sh poisoned some frames of the node: read in at registration, they
# take spares of their own.)
phys=$(hbmnl range-node hbm0 1 64 >/dev/null; hbmnl devices | sed -n 's/^device 1 .* phys=\(0x[0-9a-f]*\)$/\1/p')
echo "mc_event ue $((phys + 0x10000)) 1" >$prov
eventually "EDAC: an uncorrected error retires the page" 'hbmctl pages hbm0 | grep -q "^0x10000 *1 .*retired *ue"'
echo "mc_event ce $((phys + 0x20000)) 7" >$prov
eventually "EDAC: corrected errors count" 'hbmnl devices | grep -q "^device 1 .* ce=7 ue=1 "'
check "EDAC: below the threshold, not retired" '! hbmctl pages hbm0 | grep -q "^0x20000"'
echo "mc_event ue $((phys + 0x40000000)) 1" >$prov
check "EDAC: outside every device, nothing" 'hbmnl stats | grep -q "^path 4 received=2 dropped=0$"'

# A storm of correctable errors from atomic context loses no UE.
check "flood from atomic context" 'echo "flood 100000 64" >$prov'
check "flood: every CE of a 64-page storm taken" 'dmesg | grep -q "flood 100000 CE over 64 pages in .* ns, 100000 queued, UE queued"'
check "flood over 8192 pages" 'echo "flood 100000 8192" >$prov'
dmesg | grep "hbm_test_provider: flood"
check "flood: the UE was queued all the same" 'dmesg | grep -q "flood 100000 CE over 8192 pages in .* UE queued"'
eventually "flood: the UE is in the table" 'hbmctl pages gpu0 | grep -Eq "^0x1fff000 +1 .*(retired|failed) +ue"'

# Unload order: the driver may go first and come back; hbmguard may go while
# the driver stays.  A probe left on a going module's tracepoint is a WARN
# (tp_module_going_check_quiescent() in kernel/tracepoint.c).
check "fake nvidia unloads while probed" 'rmmod hbm_fake_nvidia'
check "Xid path detached" 'dmesg | grep -q "hbmguard: Xid path detached from hbm_fake_nvidia"'
check "fake nvidia loads after hbmguard" 'insmod /hbm_fake_nvidia.ko'
check "probed as it comes" '[ "$(dmesg | grep -c "receiving NVIDIA Xids from nvidia:nvidia_dev_xid of hbm_fake_nvidia")" = 2 ]'
hbmnl listen 1 8000 >/tmp/xid2.events &
wait_for /tmp/xid2.events listening
echo "xid 0000:00:1f.0 140" >$nv
wait
check "Xid 140 after the driver came back" 'grep -q "^event type=11 .* dev=0 .* state=140 count=1 aux=5$" /tmp/xid2.events'
check "provider unloads, its device goes" 'rmmod hbm_test_provider && ! hbmnl devices | grep -q gpu0'
check "unload with the driver loaded" 'rmmod hbmguard'
check "unload clean" 'dmesg | tail -n 5 | grep -q "hbmguard: unloaded"'
check "probe removed at unload" '[ "$(dmesg | grep -c "Xid path detached from hbm_fake_nvidia")" = 2 ]'
check "Xid with hbmguard gone" 'echo "xid 0000:00:1f.0 48" >$nv'
check "no PCI device: refused" '! echo "xid 0000:99:00.0 48" >$nv 2>/dev/null'
check "fake nvidia unloads" 'rmmod hbm_fake_nvidia'
finish providers
