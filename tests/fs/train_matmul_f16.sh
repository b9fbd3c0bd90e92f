#!/bin/sh
# matmul=f16: config shows matmul=f32 by default and takes f16; a bad value
# fails with EINVAL, says why in error and changes nothing. An mlp job
# with matmul=f16 trains to within 5 % of the f32 job's loss, with other
# bits than f32's, and keeps the key across a daemon restart.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
data=$top/tests/data/train/fmnist-slice.safetensors
[ -r "$data" ] || skip "no $data"
fs_start
common="model=mlp:784x16x10 data=$data optimizer=adamw lr=0.003 batch_size=32 shuffle=0 seed=5 max_steps=12 log_every=1"
new_job h "$common"
C=$M/jobs/h/config
grep -qx 'matmul=f32' "$C" || fail "config lacks matmul=f32: $(cat "$C")"
cp "$C" "$T/before"
for v in f8 F16 "" f16x bf16; do
	expect "matmul=$v" "$(w "$C" "matmul=$v")" EINVAL
	grep -q "matmul" "$M/jobs/h/error" ||
		fail "matmul=$v: error says '$(cat "$M/jobs/h/error")'"
	cmp -s "$T/before" "$C" || fail "matmul=$v: config changed"
done
expect "matmul=f16" "$(w "$C" "matmul=f16")" OK
grep -qx 'matmul=f16' "$C" || fail "config: $(cat "$C")"
new_job f "$common"
run_to_done h f
expect "h steps" "$(stat_of h step)" 12
expect "f steps" "$(stat_of f step)" 12
# near f32's loss, and the half products made other bits than f32's
hl=$(stat_of h loss)
fl=$(stat_of f loss)
echo "loss f16 $hl f32 $fl"
awk -v h="$hl" -v f="$fl" 'BEGIN { d = h - f; if (d < 0) d = -d;
	exit !(h == h && d <= 0.05 * f) }' || fail "f16 loss $hl against f32 $fl"
same=1
for p in $(ls "$M/jobs/h/params"); do
	[ "$p" = index ] && continue
	cmp -s "$M/jobs/h/params/$p" "$M/jobs/f/params/$p" || same=0
done
[ $same = 0 ] || fail "matmul=f16 gave f32's parameters"
fs_kill TERM || fail "SIGTERM"
fs_start
grep -qx 'matmul=f16' "$M/jobs/h/config" ||
	fail "after restart: $(cat "$M/jobs/h/config")"
fs_finish
