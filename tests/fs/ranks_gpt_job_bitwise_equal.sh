#!/bin/sh
# A tiny gpt job with ranks=2 steps to the same parameters, bit for bit,
# as ranks=1 with the same shards, and rank 0 samples from it: the same
# greedy bytes as the ranks=1 job's.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ranks.inc"
text=/usr/share/common-licenses/GPL-3
[ -r "$text" ] || skip "no $text"
fs_start
cfg="model=gpt:layers=1,heads=2,dim=16,ctx=16 data=$text device=cpu optimizer=adamw lr=0.003 batch_size=4 max_steps=max eval_every=5 seed=5 shards=2"
new_job one "$cfg ranks=1"
new_job two "$cfg ranks=2"
for j in one two; do
	expect "step 10 $j" "$(w "$M/jobs/$j/ctl" "step 10")" OK
	expect "step of $j" "$(stat_of $j step)" 10
	for t in wte.weight h.0.attn.c_attn.weight ln_f.bias; do
		cat "$M/jobs/$j/params/$t" >>"$T/$j.params" || fail "read $j/$t"
	done
	expect "sample $j" "$(w "$M/jobs/$j/ctl" "sample 64 GNU")" OK
	cat "$M/jobs/$j/sample" >"$T/$j.sample"
done
[ -s "$T/one.params" ] || fail "no params"
cmp -s "$T/one.params" "$T/two.params" || fail "params differ between ranks=1 and ranks=2"
expect "eval_loss" "$(stat_of two eval_loss)" "$(stat_of one eval_loss)"
expect "sample size" "$(wc -c <"$T/two.sample")" 64
cmp -s "$T/one.sample" "$T/two.sample" || fail "samples differ"
expect "ranks" "$(stat_of two ranks)" 2
fs_finish
echo PASS
