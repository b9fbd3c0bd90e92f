#!/bin/sh
# A tiny gpt job on a text file steps through the /gpuopt files: params/
# holds GPT-2's tensors, stat shows loss, eval_loss, epoch and
# tokens_per_sec, history.csv their columns; "sample N [PROMPT]" writes N
# bytes of the model's to the read-only, owner-only sample file (its size
# right for stat and read), the same greedy bytes twice from one model,
# while the job is paused and while it runs. The quick check of make
# check; train_gpt_gpl.sh trains one for real.
. "$(dirname "$0")/lib.sh"
need_root
text=/usr/share/common-licenses/GPL-3
[ -r "$text" ] || skip "no $text"
fs_start
new_job g "model=gpt:layers=1,heads=2,dim=16,ctx=16 data=$text device=cpu optimizer=adamw lr=0.003 batch_size=4 max_steps=max log_every=1 eval_every=2 seed=5"
expect "params" "$(ls "$M/jobs/g/params" | tr '\n' ' ')" \
	"h.0.attn.c_attn.bias h.0.attn.c_attn.weight h.0.attn.c_proj.bias h.0.attn.c_proj.weight h.0.ln_1.bias h.0.ln_1.weight h.0.ln_2.bias h.0.ln_2.weight h.0.mlp.c_fc.bias h.0.mlp.c_fc.weight h.0.mlp.c_proj.bias h.0.mlp.c_proj.weight index ln_f.bias ln_f.weight wpe.weight wte.weight "
expect "index" "$(grep -e '^wte' -e '^h.0.attn.c_attn.weight' "$M/jobs/g/params/index" | tr '\n' ' ')" \
	"wte.weight float32 256x16 16384 h.0.attn.c_attn.weight float32 16x48 3072 "
# 256 D + T D + 2 D + 12 D^2 + 13 D at D = T = 16
expect "params count" "$(stat_of g params)" 7664
expect "model" "$(stat_of g model)" gpt

expect "step 4" "$(w "$M/jobs/g/ctl" "step 4")" OK
expect "state" "$(cat "$M/jobs/g/state")" paused
expect "step" "$(stat_of g step)" 4
expect "epoch" "$(stat_of g epoch)" 0
tps=$(stat_of g tokens_per_sec)
awk -v t="$tps" 'BEGIN { exit !(t > 0) }' || fail "tokens_per_sec $tps"
for k in loss eval_loss accuracy; do
	v=$(stat_of g $k)
	# a byte-level model starts near ln 256 = 5.55 nats
	awk -v v="$v" -v k=$k 'BEGIN { exit !(k == "accuracy" ? v >= 0 && v <= 1 : v > 1 && v < 7) }' ||
		fail "$k $v"
done
grep -q samples_per_sec "$M/jobs/g/stat" && fail "a gpt's stat counts samples"
expect "header" "$(head -n 1 "$M/jobs/g/history.csv")" \
	"step,loss,lr,grad_norm,elapsed_s,epoch,tokens_per_sec,eval_loss,accuracy"
expect "rows" "$(tail -n +2 "$M/jobs/g/history.csv" | wc -l)" 4

# samples: N bytes, whatever they are, sized right for stat and read
expect "sample 300" "$(w "$M/jobs/g/ctl" "sample 300")" OK
expect "sample size" "$(stat -c %s "$M/jobs/g/sample")" 300
cat "$M/jobs/g/sample" > "$T/s1"
expect "sample read" "$(wc -c < "$T/s1")" 300
# read in odd pieces: the same bytes
dd if="$M/jobs/g/sample" bs=7 2>/dev/null > "$T/s1b"
cmp -s "$T/s1" "$T/s1b" || fail "a read in 7-byte pieces differs"
expect "sample again" "$(w "$M/jobs/g/ctl" "sample 300")" OK
cmp -s "$T/s1" "$M/jobs/g/sample" || fail "two greedy samples of one model differ"
expect "mode" "$(stat -c %a "$M/jobs/g/sample")" 444
# each sample replaces the last one
expect "sample prompt" "$(w "$M/jobs/g/ctl" "sample 50 Everyone is permitted to copy")" OK
expect "prompt sample size" "$(stat -c %s "$M/jobs/g/sample")" 50
grep -q "ctl sample 50" "$M/jobs/g/events" || fail "no event of the sample"
# the model's output tells its data: the owner's alone
setpriv --reuid=nobody --regid=nogroup --clear-groups \
	cat "$M/jobs/g/sample" >/dev/null 2>&1 && fail "nobody reads the sample"

# while it runs: the sample waits for a step, then the steps go on
expect "resume" "$(w "$M/jobs/g/ctl" resume)" OK
expect "sample running" "$(w "$M/jobs/g/ctl" "sample 100")" OK
expect "running sample size" "$(stat -c %s "$M/jobs/g/sample")" 100
s0=$(stat_of g step)
past()
{
	[ "$(stat_of g step)" -gt "$s0" ]
}
wait_for 30 past || fail "no step after the sample"
expect "pause" "$(w "$M/jobs/g/ctl" pause)" OK
expect "state running sample" "$(cat "$M/jobs/g/state")" paused

# temperature: any time, no rebuild; N bytes all the same
expect "temperature" "$(w "$M/jobs/g/config" "temperature=1.5")" OK
expect "sample hot" "$(w "$M/jobs/g/ctl" "sample 1000")" OK
expect "hot size" "$(wc -c < "$M/jobs/g/sample")" 1000
fs_finish
