#!/bin/sh
# libgpuopt/examples/gpt.c (a byte-level GPT trained by gpo_train_step on
# a text file, sampled by gpo_model_sample) for 200 steps of a small model
# on cpu:0 on GPL-3: it exits 0, prints its progress with the held-out
# loss, the training loss falls well below ln 256 = 5.5 nats a byte, and
# it prints a sample of the asked length.
. "$(dirname "$0")/lib.sh"
GPT=$BUILD/bin/gpt
TEXT=/usr/share/common-licenses/GPL-3
[ -x "$GPT" ] || fail "no $GPT"
[ -r "$TEXT" ] || skip "no $TEXT"
"$GPT" -d cpu:0 -m gpt:layers=1,heads=2,dim=32,ctx=32 -s 200 -p 100 \
	-n 120 -t 0 -P "The " "$TEXT" >"$T/out" 2>"$T/err" ||
	fail "gpt: exit $?: $(cat "$T/err")"
[ ! -s "$T/err" ] || fail "gpt: stderr $(cat "$T/err")"
cat "$T/out"
steps=$(awk '/^step / { s = $2 } END { print s }' "$T/out")
expect "steps" "$steps" 200
last=$(awk '/^step / { l = $4 } END { print l }' "$T/out")
eval=$(awk '/^step / { for (i = 1; i < NF; i++) if ($i == "eval_loss") e = $(i + 1) } END { print e }' "$T/out")
[ -n "$last" ] && [ -n "$eval" ] || fail "no loss lines"
awk -v l="$last" -v e="$eval" 'BEGIN { exit !(l < 3.5 && e < 3.7) }' ||
	fail "the loss did not fall: training $last, held out $eval"
# the sample: "The " and 120 bytes after the line that announces it
sample=$(sed -n '/^sample (temperature 0):$/,$p' "$T/out" | tail -n +2)
[ -n "$sample" ] || fail "no sample"
case $sample in
"The "*) ;;
*) fail "the sample does not continue the prompt: $sample" ;;
esac
! grep -qi nan "$T/out" || fail "NaN in the output"
echo "ok: training loss $last, held-out loss $eval"
