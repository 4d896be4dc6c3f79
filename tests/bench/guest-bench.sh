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

. /persist.sh

# Provider API: CEs from atomic context, 10^6 over 64, 4096 and 10^5 pages,
# one UE after each storm; none of the UEs may be lost, and no CE up to 10^5
# pages (intake.c, policy.c).  Lost is what the table did not count once the
# queue drained (the device's dropped counter, checked against its CE count)
# and what it counted but forgot toward a page's threshold (its forgotten
# counter: a bucket dropped).  Then 10 CEs on each of 10^5 pages at a
# threshold of 10: every page must reach it, whatever way the queue and
# the worker split its errors.
insmod /hbm_test_provider.ko || exit 1
prov=/sys/kernel/debug/hbm_test_provider/ctl
echo "register gpu0 0000:3b:00.0 17179869184 65536 4096" >$prov || exit 1
gid=$(hbmnl devices | sed -n 's/^device \([0-9]*\) gpu0 .*/\1/p')
# "dropped forgotten ce ue" of device $1 named $2, from its netlink attributes
counts() {
	hbmnl devices | sed -n "s/^device $1 $2 .* dropped=\([0-9]*\) forgotten=\([0-9]*\) .* ce=\([0-9]*\) ue=\([0-9]*\) .*/\1 \2 \3 \4/p"
}
# Waits until device $1 named $2 has counted and dropped $3 CEs in all.
drained() {
	i=0
	while [ $i -lt 6000 ]; do
		set -- $1 $2 $3 $(counts $1 $2)
		[ $(($4 + $6)) -ge $3 ] && return
		sleep 0.1
		i=$((i + 1))
	done
}
before=$(awk '/^(Slab|VmallocUsed):/ { s += $2 } END { print s }' /proc/meminfo)
printf '%-44s %12s %10s %10s %10s\n' "provider API (qemu TCG guest)" "CE/s taken" "CE lost" "forgotten" "UE lost"
# The floor: the provider's own loop (its spinlock, a call) reporting nothing.
echo "loop 1000000 100000" >$prov || exit 1
set -- $(dmesg | sed -n 's/.*loop 1000000 over 100000 pages in \([0-9]*\) ns.*/\1/p' | tail -n 1)
floor=$(( 1000000 * 1000000000 / $1 ))
printf '%-44s %12d\n' "the loop alone, no report (floor)" $floor
for pages in 64 4096 100000; do
	set -- $(counts $gid gpu0)
	d0=$1 f0=$2 c0=$3 u0=$4
	echo "flood 1000000 $pages" >$prov || exit 1
	drained $gid gpu0 $((d0 + c0 + 1000000))
	set -- $(counts $gid gpu0)
	ce_lost=$((1000000 - ($3 - c0))) forgotten=$(($2 - f0)) ue_lost=$((1 - ($4 - u0)))
	set -- $(dmesg | sed -n "s/.*flood 1000000 CE over $pages pages in \([0-9]*\) ns, \([0-9]*\) queued, UE .*/\1 \2/p" | tail -n 1)
	rate=$(( $2 * 1000000000 / $1 ))
	printf '%-44s %12d %10d %10d %10d\n' "10^6 CEs over $pages pages" $rate $ce_lost $forgotten $ue_lost
	printf '@bench\tCE storm over %s pages (events/s)\t%s\tevents/s\tthe reporting loop alone (events/s)\t%s\t>= 10^6/s, 0 UE lost, 0 CE lost up to 10^5 pages\n' $pages $rate $floor
	printf '@bench\tCE storm over %s pages: CEs lost (not counted)\t%s\tCEs\t-\t-\t0\n' $pages $ce_lost
	printf '@bench\tCE storm over %s pages: CEs forgotten (counted, not toward a threshold)\t%s\tCEs\t-\t-\t0\n' $pages $forgotten
	printf '@bench\tCE storm over %s pages: UEs lost\t%s\tUEs\t-\t-\t0\n' $pages $ue_lost
done
after=$(awk '/^(Slab|VmallocUsed):/ { s += $2 } END { print s }' /proc/meminfo)
echo unregister >$prov || exit 1	# the test provider has one device at a time
echo "register storm storm-0 2147483648 4096 16" >$prov || exit 1
sid=$(hbmnl devices | sed -n 's/^device \([0-9]*\) storm .*/\1/p')
hbmctl policy storm ce_threshold=10 >/dev/null || exit 1
echo "flood 1000000 100000" >$prov || exit 1
drained $sid storm 1000000
# Every page of 0..99999 in the table: by its tenth CE, or page 8191 by the UE.
at=$(hbmnl devices | sed -n "s/^device $sid storm .* retired=\([0-9]*\) pending=\([0-9]*\) failed=\([0-9]*\) .*/\1 \2 \3/p")
set -- $at $(counts $sid storm)
printf '%-44s %12d of 100000 (%d forgotten)\n' "10 CEs on each of 10^5 pages, threshold 10" $(($1 + $2 + $3)) $5
printf '@bench\tCE storm, 10 CEs on each of 10^5 pages at threshold 10: pages that reached it\t%s\tpages\tpages erring\t100000\t>= 1.0x\n' $(($1 + $2 + $3))
intake=$(dmesg | sed -n 's/.*intake: \([0-9]*\) bytes for .*/\1/p' | tail -n 1)
echo "kernel memory: the intake takes $intake bytes, allocated at load"
echo "(a ring of 4096 reports and a table of 10^5 pages pending);"
echo "Slab+VmallocUsed grew by $((after - before)) KiB over the three storms"
echo "(the device's CE buckets: up to 10^5 pages, some 3 MB; policy.c)"
printf '@bench\tintake kernel memory (fixed, at load)\t%s\tbytes\t-\t-\t-\n' "$intake"
printf '@bench\tkernel memory growth over the CE storms\t%s\tKiB\t-\t-\t-\n' $((after - before))
rmmod hbm_test_provider && rmmod hbmguard
