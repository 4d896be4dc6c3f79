#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo: the job hbmguard exists for.  A Debian bookworm guest in qemu
# (TCG: no GPU, no KVM) with hbmguard installed as an operator would, four
# simulated GPUs whose memory the ranks map, and a 4-rank PyTorch DDP job
# with each rank's weights in its own GPU's memory.  An uncorrectable error
# destroys a page of rank 2's weights mid-training: once met by hbmguard
# (pause, bypass, restore from a peer, resume), once by checkpoint-restart.
# Prints the incident's timeline and the comparison; writes the plot of
# training progress against wall time to build/demo/training.png.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
kver=$(ls -d /usr/src/linux-headers-*-amd64 | sed 's|.*/linux-headers-||' | sort -V | head -n 1)
echo "== hbmguard demo: Debian $kver guest, 4 simulated GPUs, a 4-rank PyTorch DDP job"
echo "   (the first run builds the guest's root filesystem: a few minutes)"
"$TOP/tests/system/run.sh" "$kver" demo
/usr/bin/python3 "$TOP/scripts/plot-demo.py" "$TOP/build/demo/ddp" "$TOP/build/demo/training.png"
echo "The guest's whole console: $TOP/build/logs/tier3-demo-$kver.log"
