#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# One libFuzzer target of build/fuzz/ (tests/fuzz/README.md).
#
#   run.sh check BINARY RUNS MAX_LEN     RUNS inputs from seed 1: the same
#                                        inputs on every run of one build,
#                                        so a failure is reproducible
#   run.sh explore BINARY SECONDS MAX_LEN
#                                        a random seed for SECONDS, its corpus
#                                        kept in .cache/fuzz/TARGET to grow
#                                        from run to run
#
# Either starts from the target's seeds (tests/fuzz/seeds/TARGET/, the
# inputs that once failed among them).  A crash, a leak, a sanitizer's
# report or an input that runs past 30 s fails it: the report's end, the
# input and the command that runs it again are printed.
set -euo pipefail

mode=$1 bin=$2 amount=$3 max_len=$4
target=$(basename "$bin")
top=$(cd "$(dirname "$0")/../.." && pwd)
seeds=$top/tests/fuzz/seeds/$target
out=$(dirname "$bin")
log=$out/$target.log
mkdir -p "$seeds"

case $mode in
check)
	corpus=$out/corpus/$target
	rm -rf "$corpus"
	mkdir -p "$corpus"
	how=(-seed=1 "-runs=$amount")
	;;
explore)
	corpus=$top/.cache/fuzz/$target
	mkdir -p "$corpus"
	how=("-max_total_time=$amount")
	;;
*)
	echo "run.sh: check or explore, not '$mode'" >&2
	exit 2
	;;
esac

rm -f "$out/$target-"{crash,leak,timeout,oom,slow-unit}-*
if "$bin" "${how[@]}" -timeout=30 -rss_limit_mb=2048 "-max_len=$max_len" -print_final_stats=1 \
	"-artifact_prefix=$out/$target-" "$corpus" "$seeds" >"$log" 2>&1; then
	echo "fuzz $target: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
		grep -o '[0-9]*$') inputs, corpus $(find "$corpus" -type f | wc -l) (+$(find "$seeds" -type f |
		wc -l) seeds), no failure"
	exit 0
fi
echo "fuzz $target: FAILED" >&2
tail -n 60 "$log" >&2
for f in "$out/$target-"{crash,leak,timeout,oom}-*; do
	[ -e "$f" ] || continue
	echo "input ($(stat -c %s "$f") bytes, first 512):" >&2
	head -c 512 "$f" | od -A d -t x1z >&2
	echo "again: $bin $f   (once fixed, keep it in $seeds/)" >&2
done
exit 1
