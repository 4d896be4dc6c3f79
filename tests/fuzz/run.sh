#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# One libFuzzer target of build/fuzz/ (tests/fuzz/README.md).
#
#   run.sh check BINARY RUNS MAX_LEN     RUNS inputs from seed 1, its seeds
#                                        taken in name order, addresses not
#                                        randomized; libFuzzer's way through
#                                        them still differs from run to run
#                                        past some thousand inputs (helper-194),
#                                        so a failure prints its input whole
#   run.sh explore BINARY SECONDS MAX_LEN
#                                        a random seed for SECONDS, its corpus
#                                        kept in .cache/fuzz/TARGET to grow
#                                        from run to run
#
# Either starts from the target's seeds (tests/fuzz/seeds/TARGET/, the
# inputs that once failed among them).  A crash, a leak, a sanitizer's
# report, an allocation over 2 GiB or an input that runs past 60 s fails it: the report's end, the input whole (base64, so that a CI
# log is enough to run it again) and the command that runs it again are
# printed.
set -euo pipefail

mode=$1 bin=$2 amount=$3 max_len=$4
target=$(basename "$bin")
top=$(cd "$(dirname "$0")/../.." && pwd)
seeds=$top/tests/fuzz/seeds/$target
out=$(dirname "$bin")/$mode
log=$out/$target.log
tmp=$out/$target.tmp

if [ ! -d "$seeds" ] || [ -z "$(ls -A "$seeds")" ]; then
	echo "fuzz $target: no seeds in $seeds" >&2
	exit 1
fi
long=$(find "$seeds" -type f -size +"$max_len"c | head -n 1)
if [ -n "$long" ]; then
	# libFuzzer would cut it to MAX_LEN: not the input kept
	echo "fuzz $target: $long is longer than FUZZ_MAX_LEN_$target ($max_len)" >&2
	exit 1
fi
mkdir -p "$out"
rm -rf "$tmp" "$out/$target-"{crash,leak,timeout,oom,slow-unit}-*
mkdir "$tmp"
export HBM_FUZZ_TMP=$tmp	# fuzz_tmpdir()'s, removed below whatever happened

case $mode in
check)
	corpus=$out/corpus/$target
	rm -rf "$corpus"
	mkdir -p "$corpus"
	find "$seeds" -type f | LC_ALL=C sort | paste -sd, >"$tmp/seeds"
	run=(timeout 900 setarch -R "$bin" -seed=1 "-runs=$amount" -timeout=60 -rss_limit_mb=2048
	     -reload=0 "-seed_inputs=@$tmp/seeds" "$corpus")
	;;
explore)
	corpus=$top/.cache/fuzz/$target
	mkdir -p "$corpus"
	run=("$bin" "-max_total_time=$amount" -timeout=60 -rss_limit_mb=2048 "$corpus" "$seeds")
	;;
*)
	echo "run.sh: check or explore, not '$mode'" >&2
	exit 2
	;;
esac

status=0
"${run[@]}" "-max_len=$max_len" -print_final_stats=1 "-artifact_prefix=$out/$target-" \
	>"$log" 2>&1 || status=$?
rm -rf "$tmp"
if [ $status = 0 ]; then
	echo "fuzz $target: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
		grep -o '[0-9]*$') inputs, $(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n 1),"\
		"corpus $(find "$corpus" -type f | wc -l) (+$(find "$seeds" -type f | wc -l) seeds), no failure"
	exit 0
fi
echo "fuzz $target: FAILED$([ $status = 124 ] && echo ", past 900 s: a hang")" >&2
tail -n 60 "$log" >&2
for f in "$out/$target-"{crash,leak,timeout,oom}-*; do
	[ -e "$f" ] || continue
	echo "input, $(stat -c %s "$f") bytes, base64:" >&2
	base64 -w 76 "$f" >&2
	echo "again: $bin $f   (or base64 -d of the above into a file; once fixed, keep it in $seeds/)" >&2
done
exit 1
