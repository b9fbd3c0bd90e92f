#!/bin/sh
# libgpuopt/examples/mlp.c (the tensor API: a 784x256x10 MLP, gradients
# by gpo_graph_backward()) for 300 steps on cpu:0 on the Fashion-MNIST
# slice in tests/data: it exits 0, prints its progress, and the training
# loss of the last 50 steps is well below that of the first 50.
. "$(dirname "$0")/lib.sh"
MLP=$BUILD/bin/mlp
[ -x "$MLP" ] || fail "no $MLP"
"$MLP" -d cpu:0 -s 300 -e 1000 -p 50 \
	"$TOP/tests/data/train/fmnist-slice.safetensors" >"$T/out" 2>"$T/err" ||
	fail "mlp: exit $?: $(cat "$T/err")"
[ ! -s "$T/err" ] || fail "mlp: stderr $(cat "$T/err")"
cat "$T/out"
first=$(awk '/^step / { print $4; exit }' "$T/out")
last=$(awk '/^step / { l = $4 } END { print l }' "$T/out")
steps=$(awk '/^step / { s = $2 } END { print s }' "$T/out")
expect "steps" "$steps" 300
[ -n "$first" ] && [ -n "$last" ] || fail "no loss lines"
awk -v f="$first" -v l="$last" 'BEGIN { exit !(f > 1.0 && l < 0.7 * f) }' ||
	fail "the loss did not fall: $first to $last"
# every epoch line has finite losses and an accuracy above chance at the end
acc=$(awk '/^epoch / { a = $NF } END { print a }' "$T/out")
awk -v a="$acc" 'BEGIN { exit !(a > 0.5 && a <= 1) }' ||
	fail "evaluation accuracy $acc"
! grep -qi nan "$T/out" || fail "NaN in the output"
echo "ok: loss $first to $last, eval accuracy $acc"
