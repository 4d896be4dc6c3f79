#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# On a node with NVIDIA GPUs: what hbmguard's NVML source reads (hbmnvml)
# beside what nvidia-smi reports, field by field.  Run in the repository
# root, after `make gpu-bundle` on a build machine (build/gpu-bundle/ holds
# hbmnvml with bookworm's loader and libc, so it runs where the libc or the
# loader differ, as on NixOS).
#
# Read-only: it loads no module, installs nothing, resets nothing; it runs
# hbmnvml (NVML read-only queries) and nvidia-smi's queries (-q, --query-gpu).
#
#   scripts/gpu-check.sh
#
# Environment: NVML_LIB (the library, else searched), NVIDIA_SMI (else
# searched), HBM_GPU_BUNDLE (default build/gpu-bundle).
# Exit status: 0 every compared field agrees, 1 some field differs,
# 2 hbmnvml or nvidia-smi could not run (nothing compared).
set -uo pipefail
TOP=$(cd "${0%/*}/.." && pwd)
BUNDLE=${HBM_GPU_BUNDLE:-$TOP/build/gpu-bundle}
# A copy that lost its modes (carried to another machine): executable again,
# beside it rather than in /tmp, which may be mounted noexec.
if [ -f "$BUNDLE/ld-linux-x86-64.so.2" ] && ! [ -x "$BUNDLE/ld-linux-x86-64.so.2" ]; then
	rm -rf "$BUNDLE.exec" && cp -r "$BUNDLE" "$BUNDLE.exec" && chmod 0755 "$BUNDLE.exec"/* &&
		BUNDLE=$BUNDLE.exec
fi
# A node may lack the tools below (a minimal NixOS environment): the bundle's
# static busybox stands in for each missing one, after the node's own.
BB=$BUNDLE/busybox
tmp=$(mktemp -d 2>/dev/null || "$BB" mktemp -d) || { echo "gpu-check: no mktemp"; exit 2; }
trap 'rm -rf "$tmp"' EXIT
if [ -x "$BB" ]; then
	"$BB" mkdir -p "$tmp/bin" && "$BB" --install -s "$tmp/bin"
	PATH=$PATH:$tmp/bin
fi
# The running driver's version: a library or nvidia-smi of another version
# (an older one left in the Nix store) would not talk to it.
driver=$(cat /sys/module/nvidia/version 2>/dev/null)

say() { printf '%s\n' "$*"; }

# The Nix store's match for the running driver's version, else the first.
in_store() {
	timeout 30 find /nix/store -maxdepth 3 "$@" 2>/dev/null >"$tmp/store"
	{ [ -n "$driver" ] && grep -F -- "-$driver" "$tmp/store"; cat "$tmp/store"; } | head -n 1
}

# (a) libnvidia-ml.so.1: the loader's cache, NixOS's driver links, the usual
# directories, then (bounded in time) the Nix store.
find_nvml() {
	local d f
	if [ -n "${NVML_LIB:-}" ]; then
		echo "$NVML_LIB"
		return
	fi
	f=$(ldconfig -p 2>/dev/null | awk '$1 == "libnvidia-ml.so.1" && /x86-64/ { print $NF; exit }')
	[ -n "$f" ] && [ -e "$f" ] && { echo "$f"; return; }
	for d in /run/opengl-driver/lib /run/opengl-driver/lib64 /usr/lib/x86_64-linux-gnu \
		/usr/lib64 /usr/lib /usr/local/nvidia/lib64; do
		[ -e "$d/libnvidia-ml.so.1" ] && { echo "$d/libnvidia-ml.so.1"; return; }
	done
	[ -d /nix/store ] && in_store -name libnvidia-ml.so.1
}

find_smi() {
	local f
	if [ -n "${NVIDIA_SMI:-}" ]; then
		[ -x "$NVIDIA_SMI" ] && echo "$NVIDIA_SMI"
		return
	fi
	f=$(command -v nvidia-smi) && { echo "$f"; return; }
	for f in /run/current-system/sw/bin/nvidia-smi /usr/bin/nvidia-smi; do
		[ -x "$f" ] && { echo "$f"; return; }
	done
	[ -d /nix/store ] && in_store -path '*/bin/nvidia-smi'
}

lib=$(find_nvml)
if [ -z "$lib" ]; then
	say "gpu-check: no libnvidia-ml.so.1 found (set NVML_LIB)"
	exit 2
fi
libdir=$(readlink -f "$lib")
libdir=${libdir%/*}
say "== NVML library: $lib ($(readlink -f "$lib"))"
say "running driver: ${driver:-unknown} (/sys/module/nvidia/version), taint $(cat /sys/module/nvidia/taint 2>/dev/null), kernel $(uname -r 2>/dev/null)"

# (b) the view: through the bundled loader when there is a bundle, with the
# bundle's glibc first and the driver's directory for what the library needs.
if [ -x "$BUNDLE/ld-linux-x86-64.so.2" ] && [ -x "$BUNDLE/hbmnvml" ]; then
	view() {
		"$BUNDLE/ld-linux-x86-64.so.2" --library-path "$BUNDLE:$libdir" \
			"$BUNDLE/hbmnvml" --library "$lib" "$@"
	}
	say "== hbmnvml (bundled loader, $BUNDLE)"
elif [ -x "$TOP/build/hbmnvml" ]; then
	view() { "$TOP/build/hbmnvml" --library "$lib" "$@"; }
	say "== hbmnvml ($TOP/build/hbmnvml)"
else
	say "gpu-check: no hbmnvml: run 'make gpu-bundle' first"
	exit 2
fi
view >"$tmp/view" 2>"$tmp/view.err"
vrc=$?
cat "$tmp/view" "$tmp/view.err"
say "(hbmnvml exit status $vrc)"
view --json >"$tmp/view.json" 2>/dev/null
say "== hbmnvml --json"
cat "$tmp/view.json"
if [ $vrc -ge 2 ] || ! grep -q '^GPU ' "$tmp/view"; then
	say "gpu-check: hbmnvml found no GPU: nothing to compare"
	exit 2
fi

# (c) what the driver says, for the record.
smi=$(find_smi)
if [ -z "$smi" ]; then
	say "gpu-check: nvidia-smi not found (set NVIDIA_SMI): nothing compared"
	exit 2
fi
say "== $smi"
say "driver (nvidia-smi): $("$smi" --query-gpu=driver_version --format=csv,noheader | sort -u | tr '\n' ' ')"
[ -r /proc/driver/nvidia/version ] && { say "== /proc/driver/nvidia/version"; cat /proc/driver/nvidia/version; }
for t in /sys/kernel/tracing /sys/kernel/debug/tracing; do
	if [ -d "$t/events" ]; then
		if [ -d "$t/events/nvidia/nvidia_dev_xid" ]; then
			say "tracepoint nvidia:nvidia_dev_xid: present ($t/events/nvidia/nvidia_dev_xid)"
		else
			say "tracepoint nvidia:nvidia_dev_xid: absent from $t/events"
		fi
		break
	fi
done
say "== nvidia-smi -q -d PAGE_RETIREMENT,ROW_REMAPPER,ECC"
"$smi" -q -d PAGE_RETIREMENT,ROW_REMAPPER,ECC | tee "$tmp/smi-q"

# (d) field by field.
# One field of hbmnvml's text view: the value after the key in a GPU's block.
view_get() {
	awk -v gpu="$1" -v key="$2" '
		$1 == "GPU" { in_gpu = ($2 == gpu); next }
		in_gpu && $1 == key { $1 = ""; sub(/^ +/, ""); print; exit }' "$tmp/view"
}
# One --query-gpu field of one GPU; "?" when nvidia-smi has no such field.
smi_get() {
	local out
	out=$("$smi" -i "$1" --query-gpu="$2" --format=csv,noheader,nounits 2>/dev/null) ||
		{ echo "?"; return; }
	echo "$out" | head -n 1 | sed 's/^ *//; s/ *$//'
}
# A "key : value" line of the -q text, inside one GPU's block and section.
smi_text_get() {
	awk -v pci="$1" -v section="$2" -v key="$3" '
		/^GPU / { in_gpu = (toupper($2) == toupper(pci)); in_sec = 0; next }
		in_gpu && $0 ~ "^    [^ ]" { in_sec = (index($0, section) > 0) }
		in_gpu && in_sec && index($0, ":") {
			k = $0; sub(/ *:.*/, "", k); sub(/^ */, "", k)
			if (k == key) { v = $0; sub(/^[^:]*: */, "", v); print v; exit }
		}' "$tmp/smi-q"
}
# Both sides in one form: numbers as they are, yes/no, n/a for any absence.
norm() {
	case "$1" in
	"" | "?") echo "?" ;;
	n/a* | N/A | "[N/A]" | "[Not Supported]" | "Not Supported" | "[Unknown Error]") echo "n/a" ;;
	Yes | yes) echo yes ;;
	No | no) echo no ;;
	*) echo "$1" ;;
	esac
}
differ=0 compared=0
check() {	# GPU FIELD VIEW-VALUE SMI-VALUE
	local v s
	v=$(norm "$3")
	s=$(norm "$4")
	if [ "$s" = "?" ]; then
		printf '  %-28s hbmnvml=%-14s nvidia-smi has no such field: not compared\n' "$2" "$v"
		return
	fi
	compared=$((compared + 1))
	if [ "$v" = "$s" ]; then
		printf '  %-28s %-14s agrees\n' "$2" "$v"
	else
		printf '  %-28s hbmnvml=%-14s nvidia-smi=%-14s DIFFERS\n' "$2" "$v" "$s"
		differ=$((differ + 1))
	fi
}
say "== comparison (volatile ECC counts may move between the two reads)"
for uuid in $(awk '$1 == "GPU" { print $2 }' "$tmp/view"); do
	pci=$(view_get "$uuid" pci)
	say "GPU $uuid ($pci)"
	check "$uuid" uuid "$uuid" "$(smi_get "$uuid" uuid)"
	check "$uuid" pci "$pci" "$(smi_get "$uuid" pci.bus_id)"
	check "$uuid" name "$(view_get "$uuid" name)" "$(smi_get "$uuid" name)"
	mem=$(view_get "$uuid" memory)
	check "$uuid" "memory (MiB)" "$((mem / 1048576))" "$(smi_get "$uuid" memory.total)"
	check "$uuid" retired.multiple-sbe "$(view_get "$uuid" retired.multiple-sbe)" \
		"$(smi_get "$uuid" retired_pages.sbe)"
	check "$uuid" retired.dbe "$(view_get "$uuid" retired.dbe)" \
		"$(smi_get "$uuid" retired_pages.dbe)"
	check "$uuid" retired.pending "$(view_get "$uuid" retired.pending)" \
		"$(smi_get "$uuid" retired_pages.pending)"
	for f in corrected:"Correctable Error" uncorrected:"Uncorrectable Error" \
		pending:Pending failure:"Remapping Failure Occurred"; do
		v=$(view_get "$uuid" "remapped.${f%%:*}")
		[ -n "$v" ] || v=$(view_get "$uuid" remapped)
		check "$uuid" "remapped.${f%%:*}" "$v" \
			"$(smi_text_get "$pci" "Remapped Rows" "${f#*:}")"
	done
	for t in corrected uncorrected; do
		for c in volatile aggregate; do
			v=$(view_get "$uuid" "ecc.$t.$c")
			[ -n "$v" ] || v=$(view_get "$uuid" ecc)
			check "$uuid" "ecc.$t.$c" "$v" \
				"$(smi_get "$uuid" "ecc.errors.$t.$c.total")"
		done
	done
done
say "== $compared fields compared, $differ differ"
[ $compared -gt 0 ] || exit 2
[ $differ = 0 ]
