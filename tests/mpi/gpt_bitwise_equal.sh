#!/bin/sh
# A byte-level gpt (with dropout) on the GPL's text, 10 steps on the cpu
# device: -np 2 and -np 3, and -np 2 with zero=1, give one process's
# bits with the same global batch (12) and shards (6).
. "$(dirname "$0")/lib.sh"
txt=/usr/share/common-licenses/GPL-3
[ -r "$txt" ] || skip "no $txt"
common="model=gpt:layers=1,heads=2,dim=16,ctx=16 dropout=0.1 data=$txt
	batch_size=12 max_steps=10 lr=0.003 seed=3 shards=6 device=cpu:0 -q"
mpi 1 $common dump=$T/ref.bin
ok "-np 1"
for run in "2 zero=0" "3 zero=0" "2 zero=1"; do
	set -- $run
	rm -f "$T/np.bin"
	mpi $1 $common $2 dump=$T/np.bin
	ok "-np $1 $2"
	cmp "$T/ref.bin" "$T/np.bin" || fail "-np $1 $2 differs from -np 1"
	echo "-np $1 $2: bitwise equal"
done
