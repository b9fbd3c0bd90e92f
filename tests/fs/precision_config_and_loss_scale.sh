#!/bin/sh
# The precision keys: config shows param_dtype, state_dtype, master_weights,
# loss_scale, init_scale and growth_interval with their defaults; bad values
# fail with EINVAL, say why in error and change nothing; stat shows the
# precision mode and the loss scale. An mlp trained with loss_scale=dynamic
# gives the same params as without it while the scale doubles every
# growth_interval steps; the scale survives a checkpoint and restore. A
# mode the library has no kernels for fails the job's start with the
# library's words in error.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
data=$top/tests/data/train/fmnist-slice.safetensors
[ -r "$data" ] || skip "no $data"
fs_start
C=$M/jobs/c
new_job c "optimizer=adam lr=0.01 model=external:w:4x4 max_steps=50"
for kv in param_dtype=f32 state_dtype=f32 master_weights=1 loss_scale=1 \
	  init_scale=65536 growth_interval=2000; do
	grep -qx "$kv" "$C/config" || fail "config lacks $kv: $(cat "$C/config")"
done
expect "stat loss_scale" "$(stat_of c loss_scale)" 1
expect "stat param_dtype" "$(stat_of c param_dtype)" f32
expect "stat state_dtype" "$(stat_of c state_dtype)" f32
expect "stat master_weights" "$(stat_of c master_weights)" 1

cp "$C/config" "$T/before"
bad()
{
	expect "$1" "$(w "$C/config" "$1")" EINVAL
	[ -s "$C/error" ] || fail "$1: error is empty"
	grep -q "$2" "$C/error" || fail "$1: error says '$(cat "$C/error")'"
	cmp -s "$T/before" "$C/config" || fail "$1: config changed"
}
bad "param_dtype=u8" "param_dtype: 'u8' is not f32, f16 or bf16"
bad "param_dtype=f64" "param_dtype"
bad "state_dtype=f16" "state_dtype: 'f16' is not f32, bf16 or u8"
bad "lr=0.02 state_dtype=" "state_dtype"
bad "loss_scale=dyn" "loss_scale"
bad "loss_scale=-1" "loss_scale"
bad "init_scale=0" "init_scale"
bad "growth_interval=0" "growth_interval"
bad "growth_interval=1.5" "growth_interval"
bad "master_weights=2" "master_weights"
# the built-in objectives compute unscaled gradients
new_job q "optimizer=sgd lr=0.1 model=quadratic:7"
expect "quadratic loss_scale" "$(w "$M/jobs/q/config" "loss_scale=dynamic")" \
	EINVAL
grep -q "unscaled gradients" "$M/jobs/q/error" || fail "q: $(cat "$M/jobs/q/error")"

# good ones show, stat follows
expect "dynamic" "$(w "$C/config" "loss_scale=dynamic init_scale=1024 growth_interval=3 master_weights=0")" OK
grep -qx 'loss_scale=dynamic' "$C/config" || fail "config: $(cat "$C/config")"
grep -qx 'init_scale=1024' "$C/config" || fail "config: $(cat "$C/config")"
grep -qx 'growth_interval=3' "$C/config" || fail "config: $(cat "$C/config")"
expect "stat loss_scale dynamic" "$(stat_of c loss_scale)" 1024
expect "stat master_weights 0" "$(stat_of c master_weights)" 0
expect "fixed" "$(w "$C/config" "loss_scale=128")" OK
expect "stat loss_scale fixed" "$(stat_of c loss_scale)" 128

# training: the same params with and without dynamic loss scaling
common="model=mlp:784x16x10 data=$data optimizer=adamw lr=0.003 batch_size=32 shuffle=0 seed=5 max_steps=7 log_every=1"
new_job plain "$common"
new_job scaled "$common loss_scale=dynamic init_scale=256 growth_interval=2"
run_to_done plain scaled
expect "scaled steps" "$(stat_of scaled step)" 7
expect "scaled skipped" "$(stat_of scaled skipped)" 0
# 256 doubled after steps 2, 4 and 6
expect "scaled loss_scale" "$(stat_of scaled loss_scale)" 2048
grep -q '^gpuopt_job_loss_scale{gpuopt_job="scaled",.*} 2048$' "$M/metrics.prom" ||
	fail "metrics: $(grep loss_scale "$M/metrics.prom")"
for p in $(ls "$M/jobs/plain/params"); do
	[ "$p" = index ] && continue
	cmp -s "$M/jobs/plain/params/$p" "$M/jobs/scaled/params/$p" ||
		fail "params/$p differ with loss scaling"
done

# a checkpoint keeps the scale; a restore brings it back
expect "checkpoint" "$(w "$M/jobs/scaled/ctl" "checkpoint at7")" OK
expect "loss_scale=64" "$(w "$M/jobs/scaled/config" "loss_scale=64")" OK
expect "stat 64" "$(stat_of scaled loss_scale)" 64
expect "restore" "$(w "$M/jobs/scaled/ctl" "restore at7")" OK
grep -qx 'loss_scale=dynamic' "$M/jobs/scaled/config" ||
	fail "restored config: $(cat "$M/jobs/scaled/config")"
expect "restored loss_scale" "$(stat_of scaled loss_scale)" 2048

# 8-bit state trains (its bytes are test_optim_u8's business)
new_job u8 "$common state_dtype=u8"
run_to_done u8
expect "u8 steps" "$(stat_of u8 step)" 7
expect "stat u8 state_dtype" "$(stat_of u8 state_dtype)" u8

# a precision the library cannot step yet: the job fails at its start or
# first step, with the library's words in error, and nothing else does
# (half parameters train: train_half_params.sh)
for mode in "state_dtype=u8 amsgrad=1"; do
	new_job h "$common $mode"
	r=$(w "$M/jobs/h/ctl" start)
	if [ "$r" = OK ]; then
		wait_for 60 job_stopped h || fail "$mode: still running"
		expect "$mode state" "$(cat "$M/jobs/h/state")" failed
	else
		expect "$mode start" "$r" ENOSYS
	fi
	echo "$mode: $(cat "$M/jobs/h/error")"
	grep -q 'no kernel for this dtype\|f32 parameters' "$M/jobs/h/error" ||
		fail "$mode error: $(cat "$M/jobs/h/error")"
	expect "$mode steps" "$(stat_of h step)" 0
	expect "rmdir h" "$("$FSIO" rmdir "$M/jobs/h")" OK
done
expect "plain still done" "$(cat "$M/jobs/plain/state")" done
fs_finish
