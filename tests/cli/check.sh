#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# hbmctl and hbmguardd as an operator calls them, on the build machine: no
# module, no daemon.  --help and --version on stdout with exit 0, every
# command's --help, bad usage on stderr with exit 2, options after the
# command, and the exit statuses of a missing daemon (3) and a missing
# /dev/hbmguard (4).  What needs the module is tier 2's (tests/kernel/tier2.sh).
set -uo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
HBMCTL=${HBMCTL:-$TOP/build/hbmctl}
HBMGUARDD=${HBMGUARDD:-$TOP/build/hbmguardd}
VERSION=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TOP/dkms.conf")
NOSOCK=/nonexistent/hbmguard/control.sock
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
pass=0 fail=0

# run WANT_RC CMD...: runs CMD with its stdout in $out, stderr in $err.
run() {
	local want=$1 rc
	shift
	"$@" >"$out" 2>"$err"
	rc=$?
	[ "$rc" = "$want" ] || { echo "  exit $rc, not $want: $*" >&2; return 1; }
}
check() {
	if eval "$2"; then
		pass=$((pass + 1))
	else
		echo "FAIL: $1" >&2
		sed 's/^/  stdout: /' "$out" >&2
		sed 's/^/  stderr: /' "$err" >&2
		fail=$((fail + 1))
	fi
}
quiet_out() { [ ! -s "$out" ]; }
quiet_err() { [ ! -s "$err" ]; }

commands=$("$HBMCTL" --help | sed -n '/^commands:/,/^$/{s/^  \([a-z-]*\).*/\1/p}')
# The extraction must find what is known to be there.
for c in status pages retire gpus; do
	grep -qx "$c" <<<"$commands" || { echo "check.sh: '$c' not in hbmctl --help: the pattern is stale" >&2; exit 1; }
done

check "hbmctl --help: stdout, exit 0" 'run 0 "$HBMCTL" --help && quiet_err && grep -q "^usage: hbmctl " "$out"'
check "hbmctl -h" 'run 0 "$HBMCTL" -h && quiet_err && grep -q "^usage: hbmctl " "$out"'
check "hbmctl --version: the version of dkms.conf" 'run 0 "$HBMCTL" --version && quiet_err && [ "$(cat "$out")" = "hbmctl $VERSION" ]'
for c in $commands; do
	check "hbmctl $c --help" 'run 0 "$HBMCTL" $c --help && quiet_err &&
		grep -q "^usage: hbmctl \[OPTIONS\] $c\( \|$\)" "$out"'
	check "hbmctl --help $c" 'run 0 "$HBMCTL" --help $c && quiet_err &&
		grep -q "^usage: hbmctl \[OPTIONS\] $c\( \|$\)" "$out"'
	check "hbmctl $c --version" 'run 0 "$HBMCTL" $c --version && [ "$(cat "$out")" = "hbmctl $VERSION" ]'
	check "hbmctl $c --bogus: exit 2, said on stderr" 'run 2 "$HBMCTL" $c --bogus && quiet_out &&
		grep -q "^hbmctl: unknown option.*--bogus" "$err"'
	check "hbmctl $c --json=bogus refused" 'run 2 "$HBMCTL" $c --json=bogus && quiet_out &&
		grep -q "^hbmctl: --json takes short, pretty or off, not .bogus.$" "$err"'
done
check "an unknown command: exit 2" 'run 2 "$HBMCTL" frobnicate && quiet_out && grep -q "^hbmctl: unknown command .frobnicate.$" "$err"'
check "an unknown command with --help: still bad usage" 'run 2 "$HBMCTL" frobnicate --help && quiet_out'
check "--socket without its path" 'run 2 "$HBMCTL" status --socket && quiet_out && grep -q "^hbmctl: --socket needs an argument$" "$err"'
check "--no-legend takes no value" 'run 2 "$HBMCTL" --no-legend=1 devices && quiet_out'
check "--json takes its mode after =, not as the next word" 'run 2 "$HBMCTL" --json pretty && grep -q "unknown command .pretty." "$err"'
check "too few arguments: the command's synopsis" 'run 2 "$HBMCTL" pages && quiet_out &&
	grep -q "^usage: hbmctl \[OPTIONS\] pages DEV$" "$err"'
check "too many" 'run 2 "$HBMCTL" gpus extra && quiet_out && grep -q "^hbmctl: gpus takes no argument$" "$err"'
check "undrain takes no device" 'run 2 "$HBMCTL" undrain sim0 && quiet_out && grep -q "^hbmctl: undrain takes no argument$" "$err"'
check "--pending is retire's only" 'run 2 "$HBMCTL" --pending status && quiet_out && grep -q "^hbmctl: --pending is an option of retire only$" "$err"'

# The daemon's commands, the daemon down: 3, nothing on stdout, in any
# JSON mode, the options before or after the command.
for c in ranks incidents gpus drain undrain; do
	for opts in "" "--json" "--json=short" "--json=pretty" "--json=off" "--no-legend"; do
		check "hbmctl $c $opts, no daemon: exit 3" 'run 3 "$HBMCTL" $opts --socket $NOSOCK $c && quiet_out &&
			grep -q "^hbmctl: hbmguardd at $NOSOCK: not running (systemctl start hbmguardd)$" "$err"'
		check "hbmctl $c $opts --socket after the command" 'run 3 "$HBMCTL" $c $opts --socket=$NOSOCK && quiet_out'
	done
done
# advise: what the node cannot see is given, and refused when it is not a
# value (nothing asked of the daemon then: exit 2, not 3).
ADV="--checkpoint-cost=10min --restart-cost=5min"
for opts in "" "--json" "--nodes=4 --window=30d" "--nodes 4 --window 90min"; do
	check "hbmctl advise $ADV $opts, no daemon: exit 3" 'run 3 "$HBMCTL" --socket $NOSOCK advise $ADV $opts &&
		quiet_out && grep -q "^hbmctl: hbmguardd at $NOSOCK: not running" "$err"'
done
for bad in "--checkpoint-cost=-10min --restart-cost=5min|--checkpoint-cost: '-10min' is not a time span" \
	   "--checkpoint-cost=soon --restart-cost=5min|--checkpoint-cost: 'soon' is not a time span" \
	   "--checkpoint-cost=0 --restart-cost=5min|--checkpoint-cost must be longer than 0" \
	   "$ADV --restart-cost=-1|--restart-cost: '-1' is not a time span" \
	   "$ADV --nodes=0|--nodes: '0' is not a number of nodes" \
	   "$ADV --nodes=-3|--nodes: '-3' is not a number of nodes" \
	   "$ADV --window=0|--window must be longer than 0" \
	   "$ADV --window=1x|--window: '1x' is not a time span" \
	   "--restart-cost=5min|advise needs --checkpoint-cost= and --restart-cost=" \
	   "--checkpoint-cost=1min|advise needs --checkpoint-cost= and --restart-cost="; do
	check "hbmctl advise ${bad%%|*}: exit 2, said" 'run 2 "$HBMCTL" --socket $NOSOCK advise ${bad%%|*} && quiet_out &&
		grep -qF "hbmctl: ${bad#*|}" "$err"'
done
check "--nodes is advise's only" 'run 2 "$HBMCTL" --socket $NOSOCK ranks --nodes=4 && quiet_out &&
	grep -q "^hbmctl: --nodes is an option of advise only$" "$err"'
check "a socket path too long: bad usage" 'run 2 "$HBMCTL" ranks --socket "/$(printf "%0200d" 0)" && quiet_out'

# The module's commands without /dev/hbmguard: 4, for status before the
# daemon is asked (a node without the module is not protected, whatever
# the daemon does).
if [ -e /dev/hbmguard ]; then
	echo "check.sh: /dev/hbmguard exists on this machine: the module-missing checks need a host without it" >&2
	fail=$((fail + 1))
else
	for args in "status" "--json=pretty status" "status --socket $NOSOCK" "devices --no-legend" \
		    "pages sim0 --json" "translate sim0 0x1000" "retire sim0 0x1000 --pending" \
		    "clear sim0 0 4K" "inject sim0 ue 0" "policy sim0" "sim-create x 1G" \
		    "sim-destroy sim0" "watch 1" "export" ""; do
		check "hbmctl $args, no module: exit 4" 'run 4 "$HBMCTL" $args && quiet_out &&
			grep -q "^hbmctl: /dev/hbmguard: No such file or directory (is the module loaded? modprobe hbmguard)$" "$err"'
	done
fi

check "hbmguardd --help: stdout, exit 0" 'run 0 "$HBMGUARDD" --help && quiet_err && grep -q "^usage: hbmguardd " "$out"'
check "hbmguardd -h" 'run 0 "$HBMGUARDD" -h && quiet_err && grep -q "^usage: hbmguardd " "$out"'
check "hbmguardd --version" 'run 0 "$HBMGUARDD" --version && quiet_err && [ "$(cat "$out")" = "hbmguardd $VERSION" ]'
check "hbmguardd -V" 'run 0 "$HBMGUARDD" -V && [ "$(cat "$out")" = "hbmguardd $VERSION" ]'
check "hbmguardd --bogus: exit 2, stderr" 'run 2 "$HBMGUARDD" --bogus && quiet_out && grep -q "^usage: hbmguardd " "$err"'
check "hbmguardd with an argument: exit 2" 'run 2 "$HBMGUARDD" extra && quiet_out && grep -q "not .extra." "$err"'
check "hbmguardd --config without its file" 'run 2 "$HBMGUARDD" --config && quiet_out'

# make bench's knobs (tests/system/run.sh KVER bench, tests/bench/README.md): a
# bad one is refused before anything is built and before the run's log is
# emptied.
for knob in BENCH_TCG_THREAD=double BENCH_SMP=3 BENCH_PARTS=ddp; do
	check "run.sh bench $knob: exit 2, no log" 'run 2 env "$knob" "$TOP/tests/system/run.sh" 0-knobs bench &&
		quiet_out && grep -q "^run.sh: $knob: " "$err" &&
		[ ! -e "$TOP/build/logs/tier3-bench-0-knobs.log" ]'
done

echo "hbmctl and hbmguardd command lines, the bench's knobs: $pass passed, $fail failed"
[ "$fail" = 0 ]
