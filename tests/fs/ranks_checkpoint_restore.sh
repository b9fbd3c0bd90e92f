#!/bin/sh
# A ranks=2 job saves a checkpoint (rank 0 writes it) and restores it on
# every rank (rank 0 sends the file to the others): the params come back
# bit for bit, and the steps after the restore are the same on both
# ranks and give the same
# bits as the steps after the checkpoint did the first time.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ranks.inc"
need_data
params()
{
	for t in fc0.weight fc0.bias fc1.weight fc1.bias; do
		cat "$M/jobs/r/params/$t" || return 1
	done >"$1"
	[ -s "$1" ]
}

fs_start
new_job r "model=mlp:784x32x10 data=$data batch_size=32 max_steps=max ranks=2 seed=9 optimizer=adamw lr=0.003"
expect "step 10" "$(w "$M/jobs/r/ctl" "step 10")" OK
expect "checkpoint" "$(w "$M/jobs/r/ctl" "checkpoint c10")" OK
params "$T/p10" || fail "params at 10"
expect "step 5" "$(w "$M/jobs/r/ctl" "step 5")" OK
params "$T/p15" || fail "params at 15"
cmp -s "$T/p10" "$T/p15" && fail "5 steps changed nothing"
expect "restore" "$(w "$M/jobs/r/ctl" "restore c10")" OK
expect "step after restore" "$(stat_of r step)" 10
params "$T/r10" || fail "params after restore"
cmp -s "$T/p10" "$T/r10" || fail "restored params differ from the saved"
expect "step 5 again" "$(w "$M/jobs/r/ctl" "step 5")" OK
expect "state" "$(cat "$M/jobs/r/state")" paused
expect "step" "$(stat_of r step)" 15
params "$T/r15" || fail "params at 15 again"
cmp -s "$T/p15" "$T/r15" ||
	fail "the steps after the restore differ from the first time"
cmp -s "$T/p10" "$T/r15" && fail "the steps after the restore changed nothing"
fs_finish
echo PASS
