#!/bin/sh
# resume.sh - run a job part of the way, checkpoint it, restart the daemon:
# the job is back, paused at its checkpoint; resume it to the end
#
#   resume.sh [-n NAME] [-m MODEL] [-s STEPS] [-b STEPS_BEFORE] [-k]
#
#   -n NAME       the job (default resume-demo)
#   -m MODEL      (default rosenbrock:1000)
#   -s STEPS      max_steps (default 2000)
#   -b STEPS      steps run before the checkpoint (default half of -s)
#   -k            keep the job at the end (default: remove it)
#
# GPUOPT_RESTART is the command that restarts the daemon (default
# "systemctl restart gpuoptfs"). A job's record (config, state, events)
# and its checkpoints live in the daemon's state directory, so the new
# daemon loads the job again: a job that was running or paused comes back
# paused at its newest checkpoint, which its next step restores. Prints
# the step and loss at the checkpoint, the job after the restart, and the
# step and loss at the end. Goes through gpuoptctl (GPUOPTCTL) and the
# tree at GPUOPT_MNT (default /gpuopt). Without -k the job goes at the end
# with its checkpoints (gpuoptctl rm --purge).
set -eu
ctl=${GPUOPTCTL:-gpuoptctl}
restart=${GPUOPT_RESTART:-systemctl restart gpuoptfs}
name=resume-demo model=rosenbrock:1000 steps=2000 before="" keep=0

usage()
{
	sed -n '5,11p' "$0" | sed 's/^# \{0,1\}//'
	exit "$1"
}

while getopts n:m:s:b:kh c; do
	case $c in
	n) name=$OPTARG ;;
	m) model=$OPTARG ;;
	s) steps=$OPTARG ;;
	b) before=$OPTARG ;;
	k) keep=1 ;;
	h) usage 0 ;;
	*) usage 2 >&2 ;;
	esac
done
[ -n "$before" ] || before=$((steps / 2))

value()		# value KEY: one line of `gpuoptctl status`
{
	"$ctl" status "$name" | awk -v k="$1" '$1 == k { print $2 }'
}

# run part of the way and checkpoint; "step N" pauses after N steps
"$ctl" create "$name" optimizer=adam lr=0.01 "model=$model" \
	"max_steps=$steps"
"$ctl" step "$name" "$before"
"$ctl" checkpoint "$name" before-restart
echo "checkpoint at step $(value step) loss $(value loss)"

# the daemon goes away; its state directory, with the job's record and
# checkpoints, stays
sh -c "$restart"
i=0
until "$ctl" jobs >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 300 ] || { echo "resume.sh: no tree" >&2; exit 1; }
	sleep 0.1
done

# the same job, back: paused at its checkpoint, its config as it was
echo "back at step $(value step) state $(value state)"
"$ctl" resume "$name"
"$ctl" wait -q "$name"
echo "done at step $(value step) loss $(value loss)"
[ "$keep" = 1 ] || "$ctl" rm --purge "$name"
