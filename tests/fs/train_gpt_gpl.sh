#!/bin/sh
# A byte-level gpt job learns the GPL's text through the /gpuopt files
# alone: its evaluation loss on the held-out tail falls below 2.0 nats a
# byte (a unigram model of the bytes sits near 3.0), and its greedy
# sample of 200 bytes holds English words. On each device of
# GPUOPT_FS_TRAIN_DEVICES: make check-train runs it on cpu, PoCL and
# lavapipe (minutes; not in make check).
. "$(dirname "$0")/lib.sh"
text=/usr/share/common-licenses/GPL-3
[ -r "$text" ] || skip "no $text"
[ -n "${GPUOPT_FS_TRAIN_DEVICES:-}" ] ||
	skip "minutes a device: make check-train runs it (GPUOPT_FS_TRAIN_DEVICES)"
not_running()
{
	[ "$(cat "$M/jobs/$1/state")" != running ]
}

fs_start
for dev in $GPUOPT_FS_TRAIN_DEVICES; do
	j=gpl_$(echo "$dev" | tr -c 'a-z0-9\n' _)
	t0=$(date +%s)
	new_job "$j" "model=gpt:layers=2,heads=4,dim=64,ctx=64 data=$text device=$dev optimizer=adamw lr=0.003 weight_decay=0 batch_size=16 max_steps=600 eval_every=100 log_every=50 seed=1"
	expect "$dev start" "$(w "$M/jobs/$j/ctl" start)" OK
	wait_for 600 not_running "$j" || fail "$dev: still running"
	expect "$dev state" "$(cat "$M/jobs/$j/state")" done
	el=$(stat_of "$j" eval_loss)
	awk -v l="$el" 'BEGIN { exit !(l > 0 && l < 2.0) }' ||
		fail "$dev: eval_loss $el nats a byte, not below 2.0"
	expect "$dev sample" "$(w "$M/jobs/$j/ctl" "sample 200")" OK
	expect "$dev sample size" "$(stat -c %s "$M/jobs/$j/sample")" 200
	# English: at least three of these words, whole
	words=$(tr -c 'A-Za-z' '\n' < "$M/jobs/$j/sample" | sort -u |
		grep -c -x -E 'the|of|to|and|or|any|you|that|this|is|in|for|work|program|License|software|covered|copy')
	[ "$words" -ge 3 ] ||
		fail "$dev: $words English words in the sample: '$(tr -c '[:print:]' ' ' < "$M/jobs/$j/sample")'"
	echo "$dev: eval_loss $el, tokens_per_sec $(stat_of "$j" tokens_per_sec), $(($(date +%s) - t0)) s; sample:"
	tr -c '[:print:]\n' ' ' < "$M/jobs/$j/sample"
	echo
done
fs_finish
