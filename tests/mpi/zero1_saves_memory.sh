#!/bin/sh
# ZeRO-1 (zero=1) keeps only a rank's share of the optimizer state on its
# device: after 3 steps of adamw (two state slots) on 2 ranks, the most
# device pool bytes one rank holds are at least half the state below
# plain data parallel's, less a small bound; on 3 ranks, two thirds; and
# its peak is no higher (the model's state goes before the shard's is
# made). The parameters are the same bits either way.
. "$(dirname "$0")/lib.sh"
gen_data
# 37*256+256 + 256*256+256 + 256*7+7 = 77319 parameters, 77320 laid out;
# adamw's exp_avg and exp_avg_sq: 2 * 4 bytes each
state=$((2 * 4 * 77320))
slack=65536
common="model=mlp:37x256x256x7 data=$T/data.safetensors batch_size=48
	optimizer=adamw lr=0.01 weight_decay=0.01 seed=4 shards=6 max_steps=3"
used()
{
	echo "$out" | sed -n 's/^pool used \([0-9]*\) peak.*/\1/p'
}
peak()
{
	echo "$out" | sed -n 's/^pool used [0-9]* peak \([0-9]*\).*/\1/p'
}
hash()
{
	echo "$out" | sed -n 's/^params .* fnv1a \([0-9a-f]*\).*/\1/p'
}
for d in $(devices); do
	for n in 2 3; do
		mpi $n $common device=$d
		ok "$d -np $n"
		plain_used=$(used)
		plain_peak=$(peak)
		plain_hash=$(hash)
		mpi $n $common device=$d zero=1
		ok "$d -np $n zero=1"
		zero_used=$(used)
		zero_peak=$(peak)
		[ -n "$plain_used" ] && [ -n "$zero_used" ] &&
			[ -n "$plain_peak" ] && [ -n "$zero_peak" ] ||
			fail "$d: no pool line in '$out'"
		[ "$(hash)" = "$plain_hash" ] ||
			fail "$d -np $n: zero=1's parameters differ"
		saved=$((plain_used - zero_used))
		want=$((state * (n - 1) / n - slack))
		echo "$d -np $n: pool $plain_used -> $zero_used bytes, saved $saved (state $state, want >= $want); peak $plain_peak -> $zero_peak"
		[ "$saved" -ge "$want" ] ||
			fail "$d -np $n zero=1: saved $saved bytes of $state of state, want >= $want"
		[ "$zero_peak" -le "$plain_peak" ] ||
			fail "$d -np $n zero=1: peak $zero_peak bytes, plain data parallel's $plain_peak"
	done
done
