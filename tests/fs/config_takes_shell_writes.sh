#!/bin/sh
# config takes what shells write: one line per write(2) (bash's printf),
# cat of a file past 128 KiB, dd bs=4096 of a long model spec, a value cut
# across two writes (applied whole when its line ends, or at close); a bad
# line fails its write and changes nothing.
. "$(dirname "$0")/lib.sh"
fs_start
C=$M/jobs/c/config
new_job c "model=quadratic:8"
val()
{
	awk -F= -v k="$1" '$1 == k { print $2 }' "$C"
}

# one line per write, at increasing offsets
expect "two writes" "$("$FSIO" seq "$C" w 'w:optimizer=adam\n' \
	'w:lr=0.05\n' c)" "OK
OK
OK"
expect "optimizer" "$(val optimizer)" adam
expect "lr" "$(val lr)" 0.05
printf 'optimizer=sgd\nlr=0.125\n' >"$C" || fail "printf"
expect "printf lr" "$(val lr)" 0.125

# a value cut in two: nothing until its line ends
expect "cut" "$("$FSIO" seq "$C" w 'w:lr=0.0' "x:awk -F= '\$1 == \"lr\" { print \$2 }' $C" \
	'w:001\n' "x:awk -F= '\$1 == \"lr\" { print \$2 }' $C" c)" "OK
0.125
OK
0.0001
OK"
# ... or the handle closes
expect "cut, no newline" "$("$FSIO" seq "$C" w 'w:lr=0.' 'w:25' c)" "OK
OK
OK"
expect "lr at close" "$(val lr)" 0.25

# a bad line: its write fails, nothing of it applies, not even later
cp "$C" "$T/before"
expect "bad line" "$("$FSIO" seq "$C" w 'w:lr=0.5\nmomentum=-3\nlr=0.' \
	c)" "EINVAL
OK"
cmp -s "$T/before" "$C" || fail "a bad line changed config"
# the writer goes on from where the failed write began
expect "after a bad line" "$("$FSIO" seq "$C" w 'w:lr=0.5\nmomentum=-3\n' \
	'w:lr=0.75\n' c)" "EINVAL
OK
OK"
expect "lr after" "$(val lr)" 0.75

# cat past 128 KiB: many comment-free lines
i=0
while [ $i -lt 20000 ]; do
	echo "lr=0.0$((i % 9 + 1))"
	i=$((i + 1))
done >"$T/big"
echo "lr=0.375" >>"$T/big"
[ "$(stat -c %s "$T/big")" -gt 131072 ] || fail "big is small"
cat "$T/big" >"$C" || fail "cat big"
expect "after cat" "$(val lr)" 0.375

# dd bs=4096 of a 1500-tensor spec on one line
{
	printf 'model=external:'
	i=0
	while [ $i -lt 1500 ]; do
		[ $i -gt 0 ] && printf ','
		printf 'tensor_%d:3' $i
		i=$((i + 1))
	done
	printf '\n'
} >"$T/spec"
[ "$(stat -c %s "$T/spec")" -gt 8192 ] || fail "spec is small"
dd if="$T/spec" of="$C" bs=4096 2>/dev/null || fail "dd"
expect "tensors" "$(grep -c . "$M/jobs/c/params/index")" 1500
fs_finish
