#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# In the guest, for make demo and make bench: the DDP job (train.py) without
# a fault, with the Guard and with its steps taking turns with and without
# it, then with a UE under rank 2's weights
# at step 15, met by hbmguard (rank 2 recovered in place, and rank 2's
# process unable to continue, replaced) and by checkpoint-restart (cold and
# warm); then ddp_report.py's report,
# every line prefixed "| " for the host.  Results in $1 (default /var/tmp/ddp).
t=/usr/local/lib/hbmguard-test
out=${1:-/var/tmp/ddp}
rm -rf "$out"
run() {
	local name=$1
	shift
	echo "# DDP job: $name"
	python3 $t/train.py "$@" >"$out.$name.log" 2>&1 || echo "# ($name: the job failed; see $out.$name.log)"
}
mkdir -p "$out"
run clean hbmguard "$out/clean"
# The Guard's cost per step: its steps and steps without it taking turns in
# one job, under hbmguard.run (the Guard then keeps each rank's own state
# for a replacement too: its most a step pays).
run overhead replace "$out/overhead" --job ddp-overhead --rotate --steps 80 --port 29700 \
	--wall 1200
run hbmguard hbmguard "$out/hbmguard" --fault-step 15 --fault sim2:0x20000
run replaced replace "$out/replaced" --job ddp-replaced --fault-step 15 --fault sim2:0x23000 \
	--cannot-continue 2 --port 29600
run ckpt-cold checkpoint "$out/ckpt-cold" --restart cold --fault-step 15 --fault sim2:0x21000
run ckpt-warm checkpoint "$out/ckpt-warm" --restart warm --fault-step 15 --fault sim2:0x22000
{
	echo "hbmctl pages sim2: the three lost pages, each bypassed to a spare"
	hbmctl pages sim2
	echo
	python3 $t/ddp_report.py "$out"
} 2>&1 | sed 's/^/| /'
