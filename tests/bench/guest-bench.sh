# SPDX-License-Identifier: GPL-2.0
# make bench, inside the guest: the module's ioctls, event latency through
# the real memory_failure() path, and provider throughput.
dmesg -n 1	# the console stays readable; the log is still checked
insmod /hbmguard.ko || exit 1
hbmbench || exit 1
echo
phys=$(hbmnl range-node hbm0 1 >/dev/null && hbmnl devices | sed -n 's/^device 0 .* phys=\(0x[0-9a-f]*\)$/\1/p')
hbmnl range-unregister 0 >/dev/null
dev=$(hbmnl range-phys hbm0 $phys 0x8000000 4096)
printf '%-44s %10s %10s %8s\n' "event latency (qemu TCG guest)" p50 p99 samples
hbmnl latency $dev $(( phys / 4096 + 4096 )) 1000 || exit 1
hbmnl echo-latency $dev 1000 || exit 1
echo

# Rank recovery through hbmguardd: UE -> rank told, UE -> rank resumed.
id=$(hbmctl sim-create rbench 1G spares=4096 identity=sim:rbench) || exit 1
printf '[Daemon]\nStateDirectory=/tmp/bstate\nControlSocket=/tmp/b.sock\n' >/tmp/b.conf
hbmguardd -c /tmp/b.conf 2>/tmp/bd.log &
daemon=$!
i=0
while ! grep -q "hbmguardd: ready" /tmp/bd.log && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
hbmrankbench /tmp/b.sock $id sim:rbench 200 || { tail /tmp/bd.log; exit 1; }
kill $daemon
wait $daemon
hbmctl sim-destroy rbench || exit 1
echo

# Provider API: CEs from atomic context; none of the UEs may be lost.
insmod /hbm_test_provider.ko || exit 1
prov=/sys/kernel/debug/hbm_test_provider/ctl
echo "register gpu0 0000:3b:00.0 17179869184 65536 4096" >$prov || exit 1
before=$(awk '/^(Slab|VmallocUsed):/ { s += $2 } END { print s }' /proc/meminfo)
for pages in 64 4096; do
	echo "flood 1000000 $pages" >$prov || exit 1
done
after=$(awk '/^(Slab|VmallocUsed):/ { s += $2 } END { print s }' /proc/meminfo)
printf '%-44s %12s %10s %10s\n' "provider API (qemu TCG guest)" "CE/s taken" "dropped" "UE lost"
dmesg | sed -n 's/.*flood \([0-9]*\) CE over \([0-9]*\) pages in \([0-9]*\) ns, \([0-9]*\) queued, UE \(.*\)$/\1 \2 \3 \4 \5/p' |
while read n pages ns queued ue; do
	printf '%-44s %12d %10d %10s\n' "10^6 CEs over $pages pages" \
		$(( queued * 1000000000 / ns )) $(( n - queued )) \
		"$([ "$ue" = queued ] && echo 0 || echo 1)"
done
echo "kernel memory: intake queues are static (4096 + 1024 slots of 32 bytes);"
echo "Slab+VmallocUsed grew by $((after - before)) KiB over both floods"
rmmod hbm_test_provider && rmmod hbmguard
