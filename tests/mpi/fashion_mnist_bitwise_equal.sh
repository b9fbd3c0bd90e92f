#!/bin/sh
# Fashion-MNIST (Debian's dataset-fashion-mnist), mlp:784x32x10, 20 steps
# on the cpu device: mpirun -np 3 and -np 2 give one process's bits with
# the same global batch (60) and shards (6), and the loss fell.
. "$(dirname "$0")/lib.sh"
fm=/usr/share/datasets/fashion-mnist
[ -e "$fm/train-images-idx3-ubyte.gz" ] || [ -e "$fm/train-images-idx3-ubyte" ] ||
	skip "no $fm (dataset-fashion-mnist)"
common="model=mlp:784x32x10 data=$fm batch_size=60 max_steps=20 eval_every=20
	optimizer=adamw lr=0.01 seed=7 shards=6 log_every=1 device=cpu:0"
mpi 1 $common dump=$T/ref.bin
ok "-np 1"
learned "-np 1"
for n in 3 2; do
	rm -f "$T/np.bin"
	mpi $n $common dump=$T/np.bin
	ok "-np $n"
	cmp "$T/ref.bin" "$T/np.bin" || fail "-np $n differs from -np 1"
	echo "-np $n: bitwise equal"
done
