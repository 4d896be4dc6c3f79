# SPDX-License-Identifier: GPL-2.0
# Tier 2, inside the guest: discrete GPUs registered from userspace
# (HBMGUARD_CMD_GPU_*), as hbmguardd registers what NVML and amdgpu's sysfs
# show, and the NVIDIA Xid tracepoint reaching such a GPU by its PCI address.
. /lib.sh
nv=/sys/kernel/debug/hbm_fake_nvidia/ctl
uuid=GPU-7f3c9a2e-1b4d-4e8f-9c6a-0000001f0000

check "load with one simulated device" 'insmod /hbmguard.ko sim_devices=1 xid_module=hbm_fake_nvidia'
check "GPU commands: every case" 'hbmnl gpu 0'
check "GPU commands: admin only" 'hbmnl unprivileged'

# The Xid path finds a GPU by its PCI address, an attribute, not its identity.
check "fake nvidia loads" 'insmod /hbm_fake_nvidia.ko'
id=$(hbmnl gpu-register gpu0 $uuid 0000:00:1f.0 1073741824 4096)
check "GPU registered at 0000:00:1f.0" '[ "$id" = 1 ]'
check "listed with its PCI address and no spares" 'hbmnl devices | grep -q "^device 1 gpu0 $uuid kind=4 .* spares=0 pci=0000:00:1f.0 driver_health=0 phys=0x0$"'
check "provider loads" 'insmod /hbm_test_provider.ko'
check "a provider cannot take the same PCI address" '! echo "register gpux 0000:00:1f.0 1073741824 4096 16" >/sys/kernel/debug/hbm_test_provider/ctl 2>/dev/null'
check "provider unloads" 'rmmod hbm_test_provider'
hbmnl listen 2 8000 >/tmp/gpu.events &
wait_for /tmp/gpu.events listening
echo "xid 0000:00:1f.0 48" >$nv
echo "xid 0000:00:1f.0 64" >$nv
wait
check "Xid 48 reaches the GPU by its PCI address" 'grep -q "^event type=11 .* dev=1 .* state=48 count=1 aux=5$" /tmp/gpu.events'
check "Xid 64 too" 'grep -q "^event type=11 .* dev=1 .* state=64 count=1 aux=5$" /tmp/gpu.events'
check "nothing dropped" 'hbmnl stats | grep -q "^path 5 received=2 dropped=0$"'

# What the driver retired, recorded: no spare consumed, none to consume.
check "driver retirement recorded" 'hbmnl retire 1 0x200000 0x1000'
check "RETIRED, no spare used" 'hbmnl devices | grep -q "^device 1 .* retired=1 pending=0 failed=0 health=0 .* spares=0 "'
check "source driver" 'hbmctl pages gpu0 | grep -q "retired.*driver"'
hbmnl listen 1 8000 >/tmp/health.events &
wait_for /tmp/health.events listening
check "remap pending: reset required" 'hbmnl gpu-health 1 3 && hbmctl devices | grep gpu0 | grep -q reset-required'
wait
check "a HEALTH event, ok -> reset-required" 'grep -q "^event type=6 .* dev=1 .* state=3 count=1 aux=0$" /tmp/health.events'
check "the same health again: no change" 'hbmnl gpu-health 1 3'
check "remap failure: RMA" 'hbmnl gpu-health 1 2 && hbmctl devices | grep gpu0 | grep -q rma'

check "GPU unregistered" 'hbmnl gpu-unregister 1'
echo "xid 0000:00:1f.0 48" >$nv
eventually "then its Xid is dropped" 'hbmnl stats | grep -q "^path 5 received=2 dropped=1$"'
check "fake nvidia unloads" 'rmmod hbm_fake_nvidia'
check "hbmguard unloads" 'rmmod hbmguard'
finish gpu.sh
