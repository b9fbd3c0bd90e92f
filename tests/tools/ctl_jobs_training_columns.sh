#!/bin/sh
# gpuoptctl jobs -o: a job that trains on data shows its stat's epoch,
# samples_per_sec (a gpt job: tokens_per_sec), eval_loss, accuracy and
# train_accuracy as columns (in JSON as numbers); a job without them shows
# - (JSON null).
. "$(dirname "$0")/lib.sh"
need_fuse
command -v python3 >/dev/null || skip "no python3"
slice=$TOP/tests/data/train/fmnist-slice.safetensors
[ -r "$slice" ] || fail "no $slice"
fs_start
# 800 training samples, 50 batches an epoch: step 60 is in epoch 1, after
# the evaluation at the end of epoch 0
ok create t model=mlp:784x16x10 "data=$slice" device=cpu batch_size=16 \
	epochs=2 seed=5 optimizer=adam lr=0.01
ok step t 60
ok create q model=quadratic:16 max_steps=20
ok step q 7
ok create g model=gpt:layers=1,heads=2,dim=16,ctx=16 \
	data=/usr/share/common-licenses/GPL-3 device=cpu batch_size=4 seed=3
ok step g 3
ok jobs --raw -o job,samples_per_sec,tokens_per_sec
expect "tokens header" "$(echo "$out" | head -n 1)" "JOB SAMPLES/S TOKENS/S"
expect "q: no tokens" "$(echo "$out" | awk '$1 == "q" { print $3 }')" "-"
expect "t: no tokens" "$(echo "$out" | awk '$1 == "t" { print $3 }')" "-"
tps=$(echo "$out" | awk '$1 == "g" { print $3 }')
expect "g: tokens_per_sec" "$tps" "$(awk '$1 == "tokens_per_sec" { printf "%.0f", $2 }' "$M/jobs/g/stat")"
awk -v s="$tps" 'BEGIN { exit !(s > 0) }' || fail "tokens_per_sec '$tps'"

cols=job,epoch,samples_per_sec,eval_loss,accuracy,train_accuracy
ok jobs --raw -o $cols
expect header "$(echo "$out" | head -n 1)" \
	"JOB EPOCH SAMPLES/S EVAL_LOSS ACCURACY TRAIN_ACC"
expect "q: none" "$(echo "$out" | awk '$1 == "q"')" "q - - - - -"
row=$(echo "$out" | awk '$1 == "t"')
want=$(awk '
	$1 == "epoch" { e = $2 } $1 == "eval_loss" { l = $2 }
	$1 == "accuracy" { a = $2 } $1 == "train_accuracy" { ta = $2 }
	END { printf "t %.20g %.6g %.4g %.4g", e, l, a, ta }' "$M/jobs/t/stat")
expect "t: stat's values" "$(echo "$row" | awk '{ print $1, $2, $4, $5, $6 }')" \
	"$want"
expect "t: epoch 1" "$(echo "$row" | awk '{ print $2 }')" 1
sps=$(echo "$row" | awk '{ print $3 }')
expect "samples_per_sec" "$sps" "$(awk '$1 == "samples_per_sec" { printf "%.0f", $2 }' "$M/jobs/t/stat")"
awk -v s="$sps" 'BEGIN { exit !(s > 0) }' || fail "samples_per_sec '$sps'"
awk -v a="$(stat_of t accuracy)" 'BEGIN { exit !(a > 0.1 && a <= 1) }' ||
	fail "t: accuracy $(stat_of t accuracy)"

# +LIST after the defaults; JSON numbers, null without a value
ok jobs -n -o +epoch,accuracy
expect "+epoch" "$(echo "$out" | awk '$1 == "t" { print $(NF - 1) }')" 1
ok jobs -J -o $cols
echo "$out" >"$T/j.json"
got=$(python3 -c '
import json, sys
d = {j["job"]: j for j in json.load(open(sys.argv[1]))["jobs"]}
st = dict(l.split() for l in open(sys.argv[2]))
t, q = d["t"], d["q"]
for k in ("epoch", "samples_per_sec", "eval_loss", "accuracy",
          "train_accuracy"):
    assert isinstance(t[k], (int, float)), (k, t[k])
    assert abs(t[k] - float(st[k])) <= 1e-9 * abs(float(st[k])), (k, t[k])
    assert q[k] is None, (k, q[k])
print("ok")' "$T/j.json" "$M/jobs/t/stat" 2>&1)
expect "json" "$got" ok
fs_finish
