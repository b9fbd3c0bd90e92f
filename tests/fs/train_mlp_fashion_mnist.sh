#!/bin/sh
# A job trains the MLP 784x256x10 on the real Fashion-MNIST through the
# /gpuopt files alone and reaches >= 85 % test accuracy: stat shows its
# epoch, accuracy and eval_loss, history.csv their columns, params/ the
# model's tensors. On the cpu backend here (about 10 s); make check-train
# runs it on PoCL and lavapipe too (GPUOPT_FS_TRAIN_DEVICES).
. "$(dirname "$0")/lib.sh"
data=/usr/share/datasets/fashion-mnist
[ -r "$data/train-images-idx3-ubyte.gz" ] ||
	skip "no $data (apt-get install dataset-fashion-mnist)"
not_running()
{
	[ "$(cat "$M/jobs/$1/state")" != running ]
}

fs_start
for dev in ${GPUOPT_FS_TRAIN_DEVICES:-cpu}; do
	j=fm_$(echo "$dev" | tr -c 'a-z0-9\n' _)
	new_job "$j" "model=mlp:784x256x10 data=$data device=$dev optimizer=adam lr=0.002 batch_size=128 epochs=2 log_every=50 seed=3"
	expect "$dev params" "$(ls "$M/jobs/$j/params" | tr '\n' ' ')" \
		"fc0.bias fc0.weight fc1.bias fc1.weight index "
	expect "$dev start" "$(w "$M/jobs/$j/ctl" start)" OK
	wait_for 1200 not_running "$j" || fail "$dev: still running"
	expect "$dev state" "$(cat "$M/jobs/$j/state")" done
	# 60000 / 128 = 468 steps an epoch, the last partial batch dropped
	expect "$dev step" "$(stat_of "$j" step)" 936
	expect "$dev epoch" "$(stat_of "$j" epoch)" 2
	acc=$(stat_of "$j" accuracy)
	awk -v a="$acc" 'BEGIN { exit !(a >= 0.85 && a <= 1) }' ||
		fail "$dev: test accuracy $acc < 0.85"
	el=$(stat_of "$j" eval_loss)
	awk -v l="$el" 'BEGIN { exit !(l > 0 && l < 0.5) }' ||
		fail "$dev: eval_loss $el"
	expect "$dev header" "$(head -n 1 "$M/jobs/$j/history.csv")" \
		"step,loss,lr,grad_norm,elapsed_s,epoch,samples_per_sec,eval_loss,accuracy"
	# the loss fell: the last logged batch loss is below the first's
	awk -F, 'NR == 2 { first = $2 } END { exit !($2 < first) }' \
		"$M/jobs/$j/history.csv" || fail "$dev: the loss did not fall"
	echo "$dev: accuracy $acc, eval_loss $el"
done
fs_finish
