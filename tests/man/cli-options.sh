#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# hbmctl(8) and hbmguardd(8) document what the programs' --help lists, no
# more and no less: each command of hbmctl has its entry under COMMANDS
# (".TP" then the command's name), each option of either program its entry
# under OPTIONS, and each entry there is one the program has.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
HBMCTL=${HBMCTL:-$TOP/build/hbmctl}
HBMGUARDD=${HBMGUARDD:-$TOP/build/hbmguardd}
fail=0

# The tag lines of the .TP paragraphs of a man page's section $2.
tags() {
	awk -v sec="$2" '/^\.SH / { in_sec = ($0 == ".SH " sec) } in_sec && prev == ".TP" { print }
		{ prev = $0 }' "$1"
}
# The options a tag line or a --help line names: -x and --long.
options() { sed 's/\\-/-/g' | grep -o -- '\(^\|[ ,"]\)--\?[a-zA-Z][a-zA-Z-]*' | sed 's/^[ ,"]//' | sort -u; }

# compare WHAT LISTED DOCUMENTED PAGE
compare() {
	local x
	for x in $2; do
		grep -qx -- "$x" <<<"$3" || { echo "$4: no entry for $1 $x" >&2; fail=1; }
	done
	for x in $3; do
		grep -qx -- "$x" <<<"$2" || { echo "$4: $x is not one of the program's ${1}s" >&2; fail=1; }
	done
}

# What --help lists; the extraction must find what is known to be there.
ctl_help=$("$HBMCTL" --help)
ctl_cmds=$(sed -n '/^commands:/,/^$/{s/^  \([a-z-]*\).*/\1/p}' <<<"$ctl_help" | sort -u)
ctl_opts=$(sed -n '/^options/,/^$/p' <<<"$ctl_help" | awk -F'  +' 'NF > 1 { print $2 }' | options)
d_opts=$("$HBMGUARDD" --help | awk -F'  +' '/^  -/ { print $2 }' | options)
for x in status pages sim-create gpus; do
	grep -qx "$x" <<<"$ctl_cmds" || { echo "cli-options.sh: hbmctl's $x not found in its --help" >&2; exit 1; }
done
for x in --json --no-legend --socket -h --help --version; do
	grep -qx -- "$x" <<<"$ctl_opts" || { echo "cli-options.sh: hbmctl's $x not found in its --help" >&2; exit 1; }
done
for x in -c --config --help --version; do
	grep -qx -- "$x" <<<"$d_opts" || { echo "cli-options.sh: hbmguardd's $x not found in its --help" >&2; exit 1; }
done

man=$TOP/daemon/man/hbmctl.8
man_cmds=$(tags "$man" COMMANDS | awk '{ print $2 }' | sed 's/\\//g; s/"//g' | sort -u)
man_opts=$(tags "$man" OPTIONS | options)
compare command "$ctl_cmds" "$man_cmds" "hbmctl(8)"
compare option "$ctl_opts" "$man_opts" "hbmctl(8)"
man=$TOP/daemon/man/hbmguardd.8
compare option "$d_opts" "$(tags "$man" OPTIONS | options)" "hbmguardd(8)"

[ $fail = 0 ] && echo "hbmctl(8), hbmguardd(8): $(wc -w <<<"$ctl_cmds") commands," \
	"$(wc -w <<<"$ctl_opts $d_opts") options documented"
exit $fail
