#!/bin/sh
# Every command answers --help and `help COMMAND`; usage errors exit 2;
# no tree exits 1 and says so; devices, pools and jobs print the tree's
# values as plain tables.
. "$(dirname "$0")/lib.sh"
need_fuse

cmds=$("$C" --help | awk '/^  [a-z]/ { print $1 }')
expect "commands" "$(echo $cmds)" \
	"devices pools jobs create set start pause resume stop reset step checkpoint restore status logs wait top plot sweep rm rescan help"
for c in $cmds; do
	ok "$c" --help
	expect "$c --help" "$(echo "$out" | head -n 1 | awk '{ print $1, $2, $3 }')" \
		"usage: gpuoptctl $c"
	help=$out
	ok help "$c"
	expect "help $c" "$out" "$help"
done
ok --version
expect version "$out" "gpuoptctl 0.1.0"
refused 2 "no command 'frob'" frob
refused 2 "usage: gpuoptctl start NAME" start
refused 2 "usage: gpuoptctl jobs" jobs extra
refused 2 "bad option '--bogus'" wait --bogus x
refused 2 "no state 'sleeping'" wait --until sleeping x
refused 2 "N must be a whole number" step x 1.5
refused 2 "'lr' is not key=value" create x lr
refused 2 "usage:" top -n 0

# an empty directory is no tree
refused 1 "$M: no gpuopt tree here" jobs
refused 1 "no gpuopt tree here" -m "$T/none" devices

fs_start
# devices: a row per device, the values of its files
ok devices
echo "$out" >"$T/devices.txt"
no_escapes "$T/devices.txt" || fail "escapes in a pipe"
expect "devices header" "$(echo "$out" | head -n 1 | awk '{ print $1, $2, $3 }')" \
	"IDX ID TYPE"
want=$(for d in $(ls "$M/devices" | sort -n); do
	echo "$d $(cat "$M/devices/$d/id") $(cat "$M/devices/$d/type")" \
	     "$(cat "$M/devices/$d/compute_units")"
done)
expect "devices rows" "$(echo "$out" | awk 'NR > 1 { print $1, $2, $3, $4 }')" \
	"$want"
col=$(echo "$out" | awk 'NR == 1 { print index($0, "NAME") }')
expect "cpu name" "$(echo "$out" | awk '$2 == "cpu:0"' | cut -c "$col"-)" \
	"$(cat "$M/devices/0/name")"

# jobs: none, then two, sorted, with their state and steps
ok jobs
expect "no jobs" "$(echo "$out" | tail -n 1)" "(no jobs)"
ok create zeta model=quadratic:16 max_steps=40
ok create alpha model=quadratic:16 max_steps=max
ok step zeta 40
ok jobs
echo "$out" >"$T/jobs.txt"
no_escapes "$T/jobs.txt" || fail "escapes in a pipe"
expect "jobs rows" "$(echo "$out" | awk 'NR > 1 { print $1, $2, $3, $4, $9 }')" \
	"alpha root created 0/max -
zeta root done 40/40 cpu:0"
expect "zeta loss" "$(echo "$out" | awk '$1 == "zeta" { print $5 }')" \
	"$(printf '%.6g' "$(stat_of zeta loss)")"

# pools: a row per device; cpu's pool holds zeta's memory
ok pools
expect "pools rows" "$(echo "$out" | awk 'NR > 1 { print $1, $2 }')" \
	"$(for d in $(ls "$M/devices" | sort -n); do
		echo "$d $(cat "$M/devices/$d/id")"; done)"
cap=$(awk '$1 == "capacity_bytes" { print $2 }' "$M/pools/0/stat")
[ "$cap" -gt 0 ] || fail "cpu pool empty"
case $(echo "$out" | awk '$2 == "cpu:0" { print $4 }') in
KiB | MiB | GiB) ;;
*) fail "pool capacity: $out" ;;
esac

# -m wins over GPUOPT_MNT
GPUOPT_MNT=$T/none "$C" -m "$M" jobs >/dev/null || fail "-m"
fs_finish
