#!/bin/sh
# resume.sh - checkpoint a job, stop it, restart the daemon, restore the
# checkpoint into the job made again, and let it run to the end
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
# "systemctl restart gpuoptfs"). A job's checkpoints live in the daemon's
# state directory under the owner's uid and the job's name, so the same
# user making a job of the same name after the restart finds them; its
# config is saved from the tree and written back. Prints the step and loss
# at the checkpoint and at the end. Goes through gpuoptctl (GPUOPTCTL) and
# the tree at GPUOPT_MNT (default /gpuopt).
set -eu
ctl=${GPUOPTCTL:-gpuoptctl}
mnt=${GPUOPT_MNT:-/gpuopt}
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
config=$(cat "$mnt/jobs/$name/config")	# a valid write, read back
"$ctl" stop "$name"

# the daemon goes away with its jobs; its state directory stays
sh -c "$restart"
i=0
until "$ctl" jobs >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 300 ] || { echo "resume.sh: no tree at $mnt" >&2; exit 1; }
	sleep 0.1
done

# the same job again, its config, its checkpoint
"$ctl" create "$name"
printf '%s\n' "$config" >"$mnt/jobs/$name/config"
"$ctl" restore "$name" before-restart
echo "restored at step $(value step)"
"$ctl" resume "$name"
"$ctl" wait -q "$name"
echo "done at step $(value step) loss $(value loss)"
[ "$keep" = 1 ] || "$ctl" rm "$name"
