#!/bin/sh
# model=external: max_steps defaults to max (the 1001st gradient once
# failed with "the job is done"), the job shows running while gradients
# arrive, a loss written to the loss file goes with the next gradient into
# stat, history.csv and a plateau schedule, and grad_norm shows a number
# or "-", never nan.
. "$(dirname "$0")/lib.sh"
fs_start
J=$M/jobs/e
new_job e "optimizer=sgd lr=0.1 model=external:w:4"
grep -qx 'max_steps=max' "$J/config" || fail "max_steps is not max"
expect "max_steps in stat" "$(stat_of e max_steps)" max
expect "grad_norm before" "$(stat_of e grad_norm)" -
"$EXTSTEP" rand 4 11 >"$T/g"
i=0
while [ $i -lt 1009 ]; do
	cat "$T/g" >"$J/grad" || fail "gradient $((i + 1))"
	i=$((i + 1))
done
expect "step" "$(stat_of e step)" 1009
expect "state" "$(cat "$J/state")" running
expect "grad_norm unmeasured" "$(stat_of e grad_norm)" -
grep -q "^grad_norm nan" "$J/stat" && fail "stat shows grad_norm nan"
expect "loss" "$(w "$J/loss" 2.5)" OK
cat "$T/g" >"$J/grad" || fail "gradient 1010"
expect "loss in stat" "$(stat_of e loss)" 2.5
expect "loss file" "$(cat "$J/loss")" 2.5
grep -q '^1010,2.5,' "$J/history.csv" || fail "history.csv has no loss"
expect "bad loss" "$(w "$J/loss" abc)" EINVAL
expect "nan loss" "$(w "$J/loss" nan)" EINVAL
expect "stop" "$(w "$J/ctl" stop)" OK
# an explicit max_steps stays
new_job m "model=external:w:4 max_steps=2"
expect "explicit" "$(stat_of m max_steps)" 2
# built-in models keep the default; they take no loss
new_job q "model=quadratic:4"
expect "built-in" "$(stat_of q max_steps)" 1000
expect "loss of a built-in" "$(w "$M/jobs/q/loss" 1)" EINVAL

# with clipping, grad_norm is measured; plateau follows the written loss
new_job p "optimizer=sgd lr=1 clip_norm=100 model=external:w:4 schedule=plateau patience=0 factor=0.5"
for i in 1 2 3 4; do
	expect "loss $i" "$(w "$M/jobs/p/loss" 3)" OK
	cat "$T/g" >"$M/jobs/p/grad" || fail "p gradient $i"
done
case $(stat_of p grad_norm) in
''|-|nan) fail "grad_norm not measured: $(stat_of p grad_norm)" ;;
esac
lr=$(stat_of p lr)
awk -v lr="$lr" 'BEGIN { exit !(lr < 1) }' ||
	fail "plateau did not lower lr on a flat loss (lr $lr)"
fs_finish
