#!/bin/sh
# A byte-level gpt job learns the GPL's text through the /gpuopt files
# alone: its evaluation loss on the held-out tail falls below 2.0 nats a
# byte (a unigram model of the bytes sits near 3.0), and its greedy
# sample of 200 bytes after "This License" holds English words.
#
# The first device of GPUOPT_FS_TRAIN_DEVICES trains from scratch (about
# 900 steps of 32 windows of 64 bytes: 6 minutes on the cpu backend of a
# 2-core machine). Each other device then takes the run over from its
# checkpoint (reset, device=, restore: the same parameters, AdamW state
# and data position), trains on for 5 steps of its own, evaluates and
# samples, all of which must still pass; from scratch PoCL would take
# about 20 minutes and lavapipe 90 here. GPUOPT_FS_GPT_SCRATCH=1 trains
# from scratch on every device. make check-train runs it on cpu, PoCL and
# lavapipe; not in make check.
. "$(dirname "$0")/lib.sh"
text=/usr/share/common-licenses/GPL-3
[ -r "$text" ] || skip "no $text"
[ -n "${GPUOPT_FS_TRAIN_DEVICES:-}" ] ||
	skip "minutes a device: make check-train runs it (GPUOPT_FS_TRAIN_DEVICES)"

# eval_loss below $2 (nats a byte)?
below()
{
	awk -v l="$(stat_of "$1" eval_loss)" -v t="$2" \
		'BEGIN { exit !(l > 0 && l < t) }'
}

# English: two of these words at least (the GPL's common words), whole,
# in the greedy sample after a prompt (from nothing, a greedy model of the GPL may well go on with
# the spaces that centre its title)
english()
{
	dev=$1 j=$2
	expect "$dev sample" "$(w "$M/jobs/$j/ctl" "sample 200 This License")" OK
	expect "$dev sample size" "$(stat -c %s "$M/jobs/$j/sample")" 200
	words=$(tr -c 'A-Za-z' '\n' < "$M/jobs/$j/sample" | sort -u |
		grep -c -x -E 'the|of|to|and|or|any|you|that|this|is|in|for|work|works|program|License|license|software|covered|copy|code|under|not|are|by|copyright|holder|holders|propagate|convey|conveying|terms|conditions|notice|source|modify|modified|version|free|rights|patent|each|with|other|such|must|may|without|also|has|have|from|which|your|its|all|can|will')
	echo "$dev: eval_loss $(stat_of "$j" eval_loss) at step $(stat_of "$j" step), tokens_per_sec $(stat_of "$j" tokens_per_sec), $(($(date +%s) - t0)) s; $words words in the sample:"
	tr -c '[:print:]\n' ' ' < "$M/jobs/$j/sample"
	echo
	[ "$words" -ge 2 ] || fail "$dev: $words English words in the sample"
}

# train job $1 in steps of 100 until its held-out loss is below $2
train()
{
	dev=$1 j=$2 goal=$3
	while ! below "$j" "$goal"; do
		[ "$(stat_of "$j" step)" -lt 2000 ] ||
			fail "$dev: eval_loss $(stat_of "$j" eval_loss) after 2000 steps"
		expect "$dev step 100" "$(w "$M/jobs/$j/ctl" "step 100")" OK
	done
}

fs_start
cfg="model=gpt:layers=2,heads=4,dim=128,ctx=64 dropout=0.1 data=$text optimizer=adamw lr=0.003 weight_decay=0 batch_size=32 max_steps=max eval_every=50 log_every=50 seed=1"
first=
more=5		# steps each other device trains on
for dev in $GPUOPT_FS_TRAIN_DEVICES; do
	t0=$(date +%s)
	if [ -z "$first" ] || [ "${GPUOPT_FS_GPT_SCRATCH:-0}" = 1 ]; then
		j=gpl_$(echo "$dev" | tr -c 'a-z0-9\n' _)
		new_job "$j" "$cfg device=$dev"
		# a margin below 2.0 for the devices that go on from here
		train "$dev" "$j" 1.97
		cut -d, -f1,2,8 "$M/jobs/$j/history.csv" | tr '\n' ' '
		echo
		expect "$dev checkpoint" "$(w "$M/jobs/$j/ctl" "checkpoint trained")" OK
		n=$(stat_of "$j" step)
		english "$dev" "$j"
		first=$j
		continue
	fi
	j=$first
	expect "$dev reset" "$(w "$M/jobs/$j/ctl" reset)" OK
	# evaluated after its $more steps
	expect "$dev device" \
		"$(w "$M/jobs/$j/config" "device=$dev eval_every=$more")" OK
	expect "$dev restore" "$(w "$M/jobs/$j/ctl" "restore trained")" OK
	expect "$dev restored step" "$(stat_of "$j" step)" "$n"
	expect "$dev step $more" "$(w "$M/jobs/$j/ctl" "step $more")" OK
	case $(stat_of "$j" device) in
	"$dev"*) ;;
	*) fail "$dev: the job runs on $(stat_of "$j" device)" ;;
	esac
	expect "$dev steps" "$(stat_of "$j" step)" "$((n + more))"
	below "$j" 2.0 ||
		fail "$dev: eval_loss $(stat_of "$j" eval_loss) nats a byte after $more steps, not below 2.0"
	english "$dev" "$j"
done
fs_finish
