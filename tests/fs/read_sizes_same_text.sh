#!/bin/sh
# Every readable file of the tree read with 1-, 1024- and 131072-byte
# buffers gives the same bytes, which are what stat(2) says in size.
. "$(dirname "$0")/lib.sh"
fs_start
new_job done "model=quadratic:3000 max_steps=30 log_every=3"
new_job ext "model=external:w:300x7,b:7"
"$EXTSTEP" rand 2107 1 >"$T/g"
cat "$T/g" >"$M/jobs/ext/grad" || fail "grad"
# gradients make it run; paused, its stat stands still
expect pause "$(w "$M/jobs/ext/ctl" pause)" OK
expect start "$(w "$M/jobs/done/ctl" start)" OK
wait_for 10 grep -qx done "$M/jobs/done/state" || fail "not done"
expect "pool" "$(w "$M/pools/0/max" 123456789)" OK
sleep 1.1	# busy_percent looks back one second: let it settle at 0

files=$(find "$M" -type f -perm -u=r | sort)
[ "$(echo "$files" | wc -l)" -gt 40 ] || fail "too few files: $files"
for f in $files; do
	dd if="$f" bs=131072 2>/dev/null >"$T/big"
	dd if="$f" bs=1024 2>/dev/null >"$T/mid"
	dd if="$f" bs=1 2>/dev/null >"$T/one"
	case $f in
	"$M/stat" | "$M/metrics.prom")	# uptime ticks between reads
		sed -i '/uptime/d' "$T/big" "$T/mid" "$T/one" ;;
	*)
		expect "size of $f" "$(stat -c %s "$f")" "$(wc -c <"$T/big")" ;;
	esac
	cmp -s "$T/big" "$T/mid" || fail "$f: 1024-byte reads differ"
	cmp -s "$T/big" "$T/one" || fail "$f: 1-byte reads differ"
	case $f in
	*/grad | */params/*) ;;
	*) [ -z "$(tail -c 1 "$T/big")" ] || fail "$f: no final newline" ;;
	esac
done
expect "grad reads back" "$(cmp "$T/g" "$M/jobs/ext/grad" && echo same)" same
fs_finish
