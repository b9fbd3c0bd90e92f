#!/bin/sh
# wait: plain lines in a pipe, a progress bar (step/max_steps, loss, ETA)
# on a terminal; --until, --timeout, failed and removed jobs.
. "$(dirname "$0")/lib.sh"
need_fuse
command -v script >/dev/null || skip "no script(1)"
fs_start

# a pipe: lines "NAME STATE step S/MAX loss L lr R eta E", the last done
ok create a model=quadratic:20000 max_steps=400 lr=0.01
ok start a
ok wait a
echo "$out" >"$T/wait.txt"
no_escapes "$T/wait.txt" || fail "escapes in a pipe"
echo "$out" | grep -vqE '^a (created|running|done) step [0-9]+/400 loss [-+.e0-9]+ lr 0\.01 eta [-:0-9]+$' &&
	fail "wait lines: $out"
expect "last line" "$(echo "$out" | tail -n 1 | awk '{ print $1, $2, $3, $4 }')" \
	"a done step 400/400"
ok wait -q a
expect "quiet" "$out" ""

# a terminal: the bar, redrawn in place, then the last line
ok create b model=quadratic:20000 max_steps=300 lr=0.01
ok start b
script -qec "$C wait b" /dev/null >"$T/tty.txt" </dev/null ||
	fail "wait on a tty"
tr '\r' '\n' <"$T/tty.txt" | grep -qE '^b \[#+\] 300/300 100%  loss [-+.e0-9]+  ETA [-:0-9]+' ||
	fail "no bar: $(cat -v "$T/tty.txt")"
grep -q "$(printf '\033')\[K" "$T/tty.txt" || fail "no line clearing"
tr '\r' '\n' <"$T/tty.txt" | grep -q '^b done step 300/300' ||
	fail "no last line: $(cat -v "$T/tty.txt")"

# --until a state; --timeout
ok create c model=quadratic:64 max_steps=max
ok start c
(sleep 0.3; "$C" pause c) &
ok wait --until paused c
wait $!
state_is c paused || fail "not paused"
refused 124 "wait c: still paused after 0.4 s" wait -u running -t 0.4 c
ok stop c
ok wait c			# stopped is an end too
refused 1 "c is stopped, not done,running" wait --until done,running c

# a job that fails: its error, exit 1 unless failed was asked for
ok create f optimizer=sgd lr=1 model=rosenbrock:10 max_steps=1000
ok start f
refused 1 "f failed: the loss is inf: the run diverged" wait f
ok wait -q --until failed f

# a job removed while waited on
ok create r model=quadratic:8 max_steps=10
"$C" wait r >/dev/null 2>"$T/removed.txt" &
waiter=$!
sleep 0.3
ok rm r
wait $waiter && fail "wait on a removed job succeeded"
grep -q "wait r: the job was removed" "$T/removed.txt" ||
	fail "removed: $(cat "$T/removed.txt")"
fs_finish
