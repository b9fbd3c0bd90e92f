#!/bin/sh
# Data parallel in the precision modes the models train in: dynamic loss
# scaling (a scale that grows every 3 steps, and one that is not a power
# of 2, so that scaling rounds), and optimizer state in bf16 when the
# library has its kernels: -np 2 and -np 3 give one process's bits
# (shards 6).
. "$(dirname "$0")/lib.sh"
gen_data
common="model=mlp:37x24x7 data=$T/data.safetensors batch_size=48 max_steps=20
	optimizer=adamw lr=0.01 seed=8 shards=6 device=cpu:0"
for mode in "loss_scale=dynamic init_scale=1000 growth_interval=3" \
	"loss_scale=dynamic init_scale=1e30 growth_interval=3" \
	"state_dtype=bf16" "state_dtype=bf16 loss_scale=dynamic init_scale=1000"; do
	rm -f "$T/ref.bin"
	mpi 1 $common $mode dump=$T/ref.bin
	case $err in
	*"no kernel for this dtype"*)
		echo "$mode: not in this library yet ($err)"
		continue ;;
	esac
	ok "$mode -np 1"
	for n in 2 3; do
		rm -f "$T/np.bin"
		mpi $n $common $mode dump=$T/np.bin
		ok "$mode -np $n"
		cmp "$T/ref.bin" "$T/np.bin" || fail "$mode: -np $n differs"
		echo "$mode -np $n: bitwise equal"
	done
done
