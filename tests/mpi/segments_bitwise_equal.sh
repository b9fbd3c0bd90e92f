#!/bin/sh
# The last shard's backward in segments (overlap=1) gives the bits of one
# process whose backward runs in one piece (overlap=0), with buckets
# smaller than a layer (4 KiB), buckets spanning layers (12 KiB) and one
# bucket, on -np 1, 2 and 3, with ZeRO-1, on every device (the last two
# sizes on the first device only); and for the byte GPT, whose tied
# embedding's gradient is written twice (the output head's, then the
# embedding's: a bucket of it is final only after the second), with and
# without ZeRO-1.
. "$(dirname "$0")/lib.sh"
gen_data
devs=$(devices)
[ -n "$devs" ] || fail "no device trains"
common="model=mlp:37x48x40x33x7 data=$T/data.safetensors batch_size=48
	max_steps=10 optimizer=adamw lr=0.01 weight_decay=0.01 seed=7 shards=6"
# every bucket size on the first device; the smallest (the most
# segments) on the others
sizes="4096 12288 4194304"
for d in $devs; do
	mpi 1 $common device=$d overlap=0 dump=$T/ref.bin
	ok "$d -np 1 overlap=0"
	for bb in $sizes; do
		for run in "1 zero=0" "2 zero=0" "3 zero=0" "2 zero=1"; do
			set -- $run
			rm -f "$T/np.bin"
			mpi $1 $common device=$d bucket_bytes=$bb $2 \
				dump=$T/np.bin
			ok "$d -np $1 bucket_bytes=$bb $2"
			cmp "$T/ref.bin" "$T/np.bin" ||
				fail "$d -np $1 bucket_bytes=$bb $2: differs from one piece"
			echo "$d -np $1 bucket_bytes=$bb $2: bitwise equal"
		done
	done
	sizes=4096
done

txt=/usr/share/common-licenses/GPL-3
[ -r "$txt" ] || skip "no $txt"
common="model=gpt:layers=2,heads=2,dim=16,ctx=16 dropout=0.1 data=$txt
	batch_size=12 max_steps=6 lr=0.003 seed=3 shards=6 device=cpu:0 -q"
mpi 1 $common overlap=0 dump=$T/ref.bin
ok "gpt -np 1 overlap=0"
for run in "1 zero=0" "2 zero=0" "3 zero=0" "2 zero=1"; do
	set -- $run
	rm -f "$T/np.bin"
	mpi $1 $common bucket_bytes=4096 $2 dump=$T/np.bin
	ok "gpt -np $1 $2"
	cmp "$T/ref.bin" "$T/np.bin" ||
		fail "gpt -np $1 bucket_bytes=4096 $2: differs from one piece"
	echo "gpt -np $1 bucket_bytes=4096 $2: bitwise equal"
done
