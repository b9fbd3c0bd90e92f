#!/bin/sh
# A job trains the MLP 784x256x10 on the real Fashion-MNIST through the
# /gpuopt files alone and reaches >= 85 % test accuracy: stat shows its
# epoch, accuracy and eval_loss, history.csv their columns, params/ the
# model's tensors. On the cpu backend here (about 10 s).
#
# make check-train runs it on PoCL and lavapipe too
# (GPUOPT_FS_TRAIN_DEVICES): the first device trains from scratch, and
# each other one takes the job over from its checkpoint 20 steps before
# the end (reset, device=, restore: the same parameters, Adam state and
# data position), runs those 20 steps on its own, evaluates, and must
# still reach 85 %. From scratch (GPUOPT_FS_MLP_SCRATCH=1) lavapipe takes
# 5 minutes here.
. "$(dirname "$0")/lib.sh"
data=/usr/share/datasets/fashion-mnist
[ -r "$data/train-images-idx3-ubyte.gz" ] ||
	skip "no $data (apt-get install dataset-fashion-mnist)"
not_running()
{
	[ "$(cat "$M/jobs/$1/state")" != running ]
}

fs_start
first=
more=20		# steps each other device runs on
for dev in ${GPUOPT_FS_TRAIN_DEVICES:-cpu}; do
	if [ -z "$first" ] || [ "${GPUOPT_FS_MLP_SCRATCH:-0}" = 1 ]; then
		j=fm_$(echo "$dev" | tr -c 'a-z0-9\n' _) own=1
		new_job "$j" "model=mlp:784x256x10 data=$data device=$dev optimizer=adam lr=0.002 batch_size=128 epochs=2 log_every=50 seed=3"
		expect "$dev params" "$(ls "$M/jobs/$j/params" | tr '\n' ' ')" \
			"fc0.bias fc0.weight fc1.bias fc1.weight index "
		# 60000 / 128 = 468 steps an epoch, the last partial batch
		# dropped: the checkpoint the other devices go on from
		expect "$dev step" "$(w "$M/jobs/$j/ctl" "step $((936 - more))")" OK
		expect "$dev checkpoint" \
			"$(w "$M/jobs/$j/ctl" "checkpoint last")" OK
		first=$j
	else
		j=$first own=0
		expect "$dev reset" "$(w "$M/jobs/$j/ctl" reset)" OK
		expect "$dev device" "$(w "$M/jobs/$j/config" "device=$dev")" OK
		expect "$dev restore" "$(w "$M/jobs/$j/ctl" "restore last")" OK
		expect "$dev restored step" "$(stat_of "$j" step)" $((936 - more))
	fi
	# paused after its steps or restored: resume runs the rest
	expect "$dev state" "$(cat "$M/jobs/$j/state")" paused
	expect "$dev resume" "$(w "$M/jobs/$j/ctl" resume)" OK
	wait_for 1200 not_running "$j" || fail "$dev: still running"
	expect "$dev state" "$(cat "$M/jobs/$j/state")" done
	case $(stat_of "$j" device) in
	"$dev"*) ;;
	*) fail "$dev: the job ran on $(stat_of "$j" device)" ;;
	esac
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
	[ $own = 0 ] || awk -F, 'NR == 2 { first = $2 } END { exit !($2 < first) }' \
		"$M/jobs/$j/history.csv" || fail "$dev: the loss did not fall"
	echo "$dev: accuracy $acc, eval_loss $el"
done
fs_finish
