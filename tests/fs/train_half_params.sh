#!/bin/sh
# param_dtype=bf16 and f16 for model jobs: an mlp job in bf16 with its
# master copy trains to within 5 % of the f32 job's loss with other bits
# (stat shows bf16, params/ the master copy's f32 values), and with
# dynamic loss scaling to the same params; a gpt job in
# bf16 rounded stochastically (master_weights=0) trains, its params/ the
# bf16 values widened; params/ written in f32 read back through the
# master copy, also after a rebuild on another device; LAMB in bf16 with
# its master copy trains like its f32 job; LAMB with 8-bit state, and f16
# without a master copy, fail the job's start with the library's words in
# error.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
data=$top/tests/data/train/fmnist-slice.safetensors
text=/usr/share/common-licenses/GPL-3
[ -r "$data" ] || skip "no $data"
[ -r "$text" ] || skip "no $text"
# half_near WHAT HALF F32: the half job's loss is within 5 % of the f32
# job's, and not the same (other bits)
half_near()
{
	echo "$1 loss half $2 f32 $3"
	awk -v h="$2" -v f="$3" 'BEGIN { d = h - f; if (d < 0) d = -d;
		exit !(h == h && d <= 0.05 * f && h != f) }' ||
		fail "$1: half loss $2 against f32 $3"
}

# start_fails JOB WORDS: the start is refused or the job fails, with
# WORDS (the library's) in its error, and nothing steps
start_fails()
{
	r=$(w "$M/jobs/$1/ctl" start)
	if [ "$r" = OK ]; then
		wait_for 60 job_stopped "$1" || fail "$1: still running"
		expect "$1 state" "$(cat "$M/jobs/$1/state")" failed
	fi
	grep -q "$2" "$M/jobs/$1/error" ||
		fail "$1 error: $(cat "$M/jobs/$1/error")"
	expect "$1 steps" "$(stat_of "$1" step)" 0
}

fs_start
common="model=mlp:784x16x10 data=$data optimizer=adamw lr=0.003 batch_size=32 shuffle=0 seed=5 max_steps=12 log_every=1"
new_job h "$common param_dtype=bf16"
new_job f "$common"
new_job s "$common param_dtype=bf16 loss_scale=dynamic init_scale=256 growth_interval=2"
grep -qx 'param_dtype=bf16' "$M/jobs/h/config" ||
	fail "config: $(cat "$M/jobs/h/config")"
run_to_done h f s
# scaled by powers of two, the bf16 gradients round the same: same params
# 256 doubled after steps 2, 4, ..., 12
expect "s loss_scale" "$(stat_of s loss_scale)" 16384
for p in $(ls "$M/jobs/h/params"); do
	[ "$p" = index ] && continue
	cmp -s "$M/jobs/h/params/$p" "$M/jobs/s/params/$p" ||
		fail "params/$p differ with loss scaling"
done
expect "h steps" "$(stat_of h step)" 12
expect "stat param_dtype" "$(stat_of h param_dtype)" bf16
expect "stat master_weights" "$(stat_of h master_weights)" 1
# params/ shows f32 values: the master copy's
expect "params/fc1.bias bytes" "$(cat "$M/jobs/h/params/fc1.bias" | wc -c)" 40
half_near mlp "$(stat_of h loss)" "$(stat_of f loss)"

# params/ written in f32 (1.1, between two bf16 values) reads back as
# written, through the master copy, also after another device's rebuild
# (before the first step) that keeps the parameters
new_job k "$common param_dtype=bf16"
i=0
while [ $i -lt 10 ]; do printf '\315\314\214\077'; i=$((i + 1)); done >"$T/p"
cat "$T/p" >"$M/jobs/k/params/fc1.bias" || fail "params write"
cmp -s "$T/p" "$M/jobs/k/params/fc1.bias" || fail "params do not read back"
expect "k device" "$(w "$M/jobs/k/config" "device=cpu:0")" OK
cmp -s "$T/p" "$M/jobs/k/params/fc1.bias" ||
	fail "the rebuild changed fc1.bias: $(od -An -tx4 "$M/jobs/k/params/fc1.bias")"

# a gpt in bf16 rounded stochastically, no master copy
new_job g "model=gpt:layers=1,heads=2,dim=16,ctx=16 data=$text optimizer=adamw lr=0.003 batch_size=4 max_steps=6 log_every=1 seed=5 param_dtype=bf16 master_weights=0"
run_to_done g
expect "g steps" "$(stat_of g step)" 6
expect "g master_weights" "$(stat_of g master_weights)" 0
# no master copy: params/ shows the bf16 values widened, low halves 0
od -An -v -tx4 "$M/jobs/g/params/wte.weight" | tr ' ' '\n' | grep . >"$T/wte"
expect "wte values" "$(wc -l < "$T/wte")" 4096
grep -qv '0000$' "$T/wte" && fail "wte.weight: not bf16 values: $(grep -v '0000$' "$T/wte" | head -3)"
gl=$(stat_of g loss)
awk -v l="$gl" 'BEGIN { exit !(l > 0 && l < 6) }' || fail "gpt loss $gl"

# LAMB with bf16 parameters and their master copy trains to within 5 %
# of the f32 job's loss; its state cannot be 8-bit: the start fails with
# the library's words in error, nothing steps
lamb="model=mlp:784x16x10 data=$data optimizer=lamb lr=0.01 weight_decay=0.01 batch_size=32 shuffle=0 seed=5 max_steps=12 log_every=1"
new_job lh "$lamb param_dtype=bf16"
new_job lf "$lamb"
run_to_done lh lf
expect "lh param_dtype" "$(stat_of lh param_dtype)" bf16
expect "lh steps" "$(stat_of lh step)" 12
half_near lamb "$(stat_of lh loss)" "$(stat_of lf loss)"
new_job lu "$lamb param_dtype=bf16 state_dtype=u8"
start_fails lu 'lamb: exp_avg in u8'

# f16 needs its master copy: the start fails, nothing steps
new_job x "$common param_dtype=f16 master_weights=0"
start_fails x 'master_weights=1'
fs_finish
