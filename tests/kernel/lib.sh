# SPDX-License-Identifier: GPL-2.0
# Helpers of the tier 2 guest scripts (busybox sh), sourced by each.
fail=0

# node1_phys: NUMA node 1's (the HBM node's) first physical address, from
# a range registered for the node and given back at once.
node1_phys() {
	node1_id=$(hbmnl range-node probe 1) || return 1
	hbmnl devices | sed -n "s/^device $node1_id .* phys=\(0x[0-9a-f]*\)\$/\1/p"
	hbmnl range-unregister $node1_id >/dev/null
}

# check NAME CONDITION: one test line, counted in $fail when false.  A
# script that runs a daemon names its log in $FAIL_LOG: its last lines go
# with a failure, since the guest and its files are gone after the run.
check() {
	if eval "$2"; then
		echo "ok $1"
	else
		echo "not ok $1"
		fail=$((fail + 1))
		[ -n "${FAIL_LOG:-}" ] && tail -n 30 "$FAIL_LOG" 2>/dev/null | sed 's/^/#   /'
	fi
}

# Like check, for what a worker applies: up to ~10 s (or $3 s) to come true.
eventually() {
	i=0
	while ! eval "$2" && [ $i -lt $((${3:-10} * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	check "$1" "$2"
}

# Wait, up to ~10 s, for a file to hold a line matching a pattern; said
# if it never does (the check that follows then fails on its own terms).
wait_for() {
	i=0
	while ! grep -q "$2" "$1" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	grep -q "$2" "$1" 2>/dev/null || echo "# wait_for: $1 held no \"$2\" after 10 s"
}

# Whether hbmrank's transcript FILE is one recovery of its rank 0, as
# incident 1 (registered, then pause, restore, resume).
recovered_once() {
	[ "$(cat "$1")" = "registered
request pause incident 1 failed_rank 0
request restore incident 1 failed_rank 0
request resume incident 1 failed_rank 0" ]
}

# The closing line of a script: its name, and what failed.
finish() {
	echo "$1: $([ $fail = 0 ] && echo all passed || echo "$fail failed")"
	# A status, not a count: exit codes wrap at 256.
	exit $((fail != 0))
}
