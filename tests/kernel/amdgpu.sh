# SPDX-License-Identifier: GPL-2.0
# Tier 2, inside the guest: amdgpu's cards through hbmguardd into the
# module.  The guest has no AMD GPU: /sys/class is a tmpfs holding the
# fixture tree of tests/unit/fixtures/amdgpu (amdgpu's own formats), where
# the daemon reads /sys/class/drm as on a node; the test changes it as
# amdgpu would, and hbmguardd's next poll (every 5 s) hears it.
. /lib.sh
FAIL_LOG=/tmp/ad.log
S=/tmp/actl.sock
drm=/sys/class/drm
card0=amdgpu-3f2e1d0c4b5a6978
printf '[Daemon]\nStateDirectory=/tmp/astate\nControlSocket=%s\n[Recovery]\nPauseTimeout=20s\nRestoreTimeout=20s\n' $S >/tmp/a.conf
ctl() { hbmctl --socket $S "$@"; }
start_daemon() {
	: >/tmp/ad.log
	hbmguardd -c /tmp/a.conf 2>>/tmp/ad.log &
	daemon=$!
	wait_for /tmp/ad.log "hbmguardd: ready"
}

check "load" 'insmod /hbmguard.ko'
check "a sysfs of amdgpu's cards" 'mount -t tmpfs amdgpu-fixture /sys/class && mkdir $drm &&
	tar -xf /amdgpu.tar -C $drm && [ -f $drm/card0/device/ras/gpu_vram_bad_pages ]'
start_daemon

# What amdgpu reserved before: registered, recorded as the driver's.
eventually "card0 registered as a GPU, at its PCI address" 'hbmnl devices |
	grep -q "^device [0-9]* amdgpu-0000:c1:00.0 $card0 kind=4 size=0xfff000000 page=4096 .* pci=0000:c1:00.0 "'
check "card1, an ASIC without unique_id, by its slot" 'hbmnl devices | grep -q " amdgpu-pci-0000:03:00.0 kind=4 "'
check "card2, in reset, too" 'hbmnl devices | grep -q " amdgpu-0a1b2c3d4e5f6071 kind=4 "'
check "not card3 (RAS off), card4 (nvidia's), the connector" '[ $(hbmnl devices | grep -c " kind=4 ") = 3 ]'
# (GPU pfns 0x12345 and 0x12346 are neighbours: one extent of 2 pages)
eventually "its reserved pages retired, the driver's" 'hbmctl pages amdgpu-0000:c1:00.0 | grep -q "^0x12345000 *2 .*retired *driver"'
check "its pending one pending" 'hbmctl pages amdgpu-0000:c1:00.0 | grep -q "^0x7fffe000 .*pending"'
check "a page it could not reserve: RMA" 'hbmnl devices | grep " $card0 " | grep -q "driver_health=2 "'
check "card1: nothing, health ok" 'hbmnl devices | grep " amdgpu-pci-0000:03:00.0 " | grep -q "retired=0 pending=0 .* driver_health=0 "'
# hbmctl gpus: the fixture's cards, amdgpu's list (R R P F) and its blocks'
# counts (card0: umc ue 2 de 1 ce 17, gfx ce 3; card1: umc ue 1; card2 in
# reset: none), beside the module's table (the F page is not in it).
devid() { hbmnl devices | sed -n "s/^device \([0-9]*\) $1 .*/\1/p"; }
check "hbmctl gpus: card0 as the fixture has it" 'ctl gpus | grep -qxF "$card0 0000:c1:00.0 device $(devid amdgpu-0000:c1:00.0) amdgpu-0000:c1:00.0 sources amdgpu health rma | driver: retired 2 ue 0 ce, pending 1, failed 1, rows remapped -, errors 3 ue 20 ce | table: retired 2, pending 1, failed 0 | last xid none"'
check "... card1" 'ctl gpus | grep -qxF "amdgpu-pci-0000:03:00.0 0000:03:00.0 device $(devid amdgpu-0000:03:00.0) amdgpu-0000:03:00.0 sources amdgpu health ok | driver: retired 0 ue 0 ce, pending 0, failed 0, rows remapped -, errors 1 ue 0 ce | table: retired 0, pending 0, failed 0 | last xid none"'
check "... card2, in reset: no counts" 'ctl gpus | grep -qxF "amdgpu-0a1b2c3d4e5f6071 0000:45:00.0 device $(devid amdgpu-0000:45:00.0) amdgpu-0000:45:00.0 sources amdgpu health ok | driver: retired 0 ue 0 ce, pending 0, failed 0, rows remapped -, errors - | table: retired 0, pending 0, failed 0 | last xid none"'
check "... and no other" '[ "$(ctl gpus | wc -l)" = 3 ]'
check "... as JSON" 'ctl --json gpus | grep -qF "{\"identity\":\"$card0\",\"pci\":\"0000:c1:00.0\",\"vendor\":\"amdgpu\",\"model\":\"\",\"size\":68702699520,\"device\":$(devid amdgpu-0000:c1:00.0),\"name\":\"amdgpu-0000:c1:00.0\",\"sources\":[\"amdgpu\"],\"health\":\"rma\",\"lost\":false,\"partial\":false,\"driver\":{\"retired_ue\":2,\"retired_ce\":0,\"pending\":1,\"failed\":1,\"remapped\":null,\"errors\":{\"ue\":3,\"ce\":20}},\"table\":{\"retired\":2,\"pending\":1,\"failed\":0},\"last_xid\":null}"'

# A restart reads the same files: nothing recorded twice.
kill $daemon
wait $daemon 2>/dev/null
hbmnl listen 100 6000 >/tmp/a.events &
listener=$!
wait_for /tmp/a.events listening
start_daemon
wait $listener
check "a restart: no page recorded again" '! grep -q "^event type=[1-4] " /tmp/a.events'

# Live: amdgpu reserves a page, its pending one, and counts a UE.
rm -f /tmp/jobA	# xid.sh's, in a run of every script (run.sh KVER all)
hbmrank $S jobA 0 1 $card0 >/tmp/jobA &
a=$!
wait_for /tmp/jobA "registered\|register:"
printf '0x00012345 : 0x00001000 : R\n0x00012346 : 0x00001000 : R\n0x0007fffe : 0x00001000 : R\n0x00000001 : 0x00001000 : F\n0x00020000 : 0x00001000 : R\n' \
	>$drm/card0/device/ras/gpu_vram_bad_pages
eventually "a page reserved later: retired" 'hbmctl pages amdgpu-0000:c1:00.0 | grep -q "^0x20000000 *1 .*retired *driver"' 30
check "... the pending one reserved: retired" 'hbmctl pages amdgpu-0000:c1:00.0 | grep -q "^0x7fffe000 *1 .*retired *driver"'
check "... journaled once, as recorded" 'grep -q "$card0: 1 page retired in 0x20000000+0x1000 (driver)$" /tmp/ad.log &&
	[ $(grep -c "$card0: 1 page retired in 0x20000000+0x1000 " /tmp/ad.log) = 1 ]'
printf 'ue: 3\nce: 17\nde: 1\n' >$drm/card0/device/ras/umc_err_count
wait $a
st=$?
check "a UE counted: the rank on the card recovers" '[ $st = 0 ] && recovered_once /tmp/jobA'
check "... one incident, the whole card" 'ctl incidents | grep -q "^incident 1: job jobA, rank 0, $card0, whole device: resumed$"'
check "... journaled" 'grep -q "^<3>hbmguardd: $card0: 1 uncorrectable error$" /tmp/ad.log'
check "hbmctl gpus: card0's new pages and its UE counted" 'ctl gpus | grep -qxF "$card0 0000:c1:00.0 device $(devid amdgpu-0000:c1:00.0) amdgpu-0000:c1:00.0 sources amdgpu health rma | driver: retired 4 ue 0 ce, pending 0, failed 1, rows remapped -, errors 4 ue 20 ce | table: retired 4, pending 0, failed 0 | last xid none"'

# A card in reset keeps its counts; the card gone is said.
printf 'Query currently inaccessible\n' >$drm/card0/device/ras/umc_err_count
rm -r $drm/card1
eventually "card1 gone: said" 'grep -q "GPU amdgpu-pci-0000:03:00.0 (0000:03:00.0) is lost to its driver" /tmp/ad.log' 30
check "nothing more taken for card0" '[ $(ctl incidents | grep -c "^incident ") = 1 ]'
check "hbmctl gpus: card1 lost" 'ctl gpus | grep -q "^amdgpu-pci-0000:03:00.0 0000:03:00.0 device [0-9]* amdgpu-0000:03:00.0 sources amdgpu health reset-required lost | "'

kill $daemon
wait $daemon 2>/dev/null
umount /sys/class
check "unload" 'rmmod hbmguard'
finish amdgpu
