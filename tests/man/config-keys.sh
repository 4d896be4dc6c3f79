#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# hbmguardd.conf(5) documents what daemon/config.c accepts, no more and no
# less: each key (every strcmp(key, "...") of the parser) has its entry
# (".TP" then ".BI KEY=" or ".BR KEY="), each section ([Daemon], [Range "..."]...) its
# .SH, and each entry of the page is a key of the parser.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
src=$TOP/daemon/config.c
man=$TOP/daemon/man/hbmguardd.conf.5
fail=0
keys=$(grep -o 'strcmp(key, "[A-Za-z]*")' "$src" | sed 's/.*"\(.*\)")/\1/' | sort -u)
sections=$( (grep -o 'strcmp(s, "[A-Za-z]*")' "$src"; grep -o 'quoted(s, "[A-Za-z]*")' "$src") |
	sed 's/.*"\(.*\)")/\1/' | sort -u)
# An entry: the tag line of a .TP paragraph.
documented=$(awk 'prev == ".TP" && match($0, /^\.B[IR]? [A-Za-z]+=/) {
	k = $2; sub(/=.*/, "", k); print k } { prev = $0 }' "$man" | sort -u)
# The extraction itself must find what is known to be there, or this
# check would pass on nothing.
for k in StateDirectory CEWindow NumaNode KillTimeout; do
	grep -qx "$k" <<<"$keys" || { echo "config-keys.sh: $k not found in $src: the pattern is stale" >&2; exit 1; }
done
grep -qx Range <<<"$sections" || { echo "config-keys.sh: no sections found in $src" >&2; exit 1; }
for k in $keys; do
	grep -qx "$k" <<<"$documented" || { echo "hbmguardd.conf(5): no entry for $k=" >&2; fail=1; }
done
for k in $documented; do
	grep -qx "$k" <<<"$keys" || { echo "hbmguardd.conf(5): $k= is not a key of config.c" >&2; fail=1; }
done
for s in $sections; do
	grep -q "^\.SH \"\[$s[] ]" "$man" || { echo "hbmguardd.conf(5): no section [$s]" >&2; fail=1; }
done
[ $fail = 0 ] && echo "hbmguardd.conf(5): $(wc -w <<<"$keys") keys, $(wc -w <<<"$sections") sections documented"
exit $fail
