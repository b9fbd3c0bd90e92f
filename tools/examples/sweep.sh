#!/bin/sh
# sweep.sh - a learning-rate sweep: one gpuoptfs job per learning rate, all
# running at once, waited on, the best one printed
#
#   sweep.sh [-m MODEL] [-s STEPS] [-o OPTIMIZER] [-p PREFIX] [-k] [LR...]
#
#   -m MODEL      the model of every job (default rosenbrock:1000)
#   -s STEPS      max_steps (default 2000)
#   -o OPTIMIZER  (default adam)
#   -p PREFIX     jobs are PREFIX-0, PREFIX-1, ... (default sweep)
#   -k            keep the jobs (default: remove them at the end)
#   LR...         the learning rates (default 0.0003 0.001 0.003 0.01 0.03)
#
# Prints "lr state step loss" for each job and then "best lr=LR loss=LOSS".
# A job that diverges fails (its error says why) and is left out of the
# ranking. The work is one `gpuoptctl sweep` (GPUOPTCTL, default from
# PATH) over a template job, and so through the tree at GPUOPT_MNT
# (default /gpuopt); gpuoptctl sweep alone sweeps any keys on a grid.
set -eu
ctl=${GPUOPTCTL:-gpuoptctl}
model=rosenbrock:1000 steps=2000 optimizer=adam prefix=sweep keep=0

usage()
{
	sed -n '4,12p' "$0" | sed 's/^# \{0,1\}//'
	exit "$1"
}

while getopts m:s:o:p:kh c; do
	case $c in
	m) model=$OPTARG ;;
	s) steps=$OPTARG ;;
	o) optimizer=$OPTARG ;;
	p) prefix=$OPTARG ;;
	k) keep=1 ;;
	h) usage 0 ;;
	*) usage 2 >&2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- 0.0003 0.001 0.003 0.01 0.03

# a template job holds the config every point starts from; the sweep
# makes $prefix-0, $prefix-1, ... from it, one per lr, all running at once
tmpl=$prefix-template
made=0
cleanup()
{
	[ "$made" = 1 ] && "$ctl" rm "$tmpl" 2>/dev/null
	[ "$keep" = 1 ] && return
	i=0
	for lr in "$@"; do
		"$ctl" stop "$prefix-$i" 2>/dev/null || true
		"$ctl" rm "$prefix-$i" 2>/dev/null || true
		i=$((i + 1))
	done
}
trap 'cleanup "$@"' EXIT
trap 'exit 1' INT TERM HUP

"$ctl" create "$tmpl" "optimizer=$optimizer" "model=$model" \
	"max_steps=$steps"
made=1
lrs=$(echo "$@" | tr ' ' ',')
# the table, best first; a job that diverged is failed and ranked last
results=$("$ctl" sweep "lr=$lrs" --template "$tmpl" --prefix "$prefix" \
	--parallel $# --quiet --raw --noheadings -o job,lr,state,step,loss) ||
	true
# in the order the rates were given, as "lr state step loss"
results=$(printf '%s\n' "$results" | sed "s/^$prefix-//" | sort -n |
	awk '{ printf "%-12s %-8s %8s %s\n", $2, $3, $4, $5 }')
printf '%-12s %-8s %8s %s\n%s\n' lr state step loss "$results"
best=$(printf '%s\n' "$results" | awk '
	$2 == "done" && $4 != "nan" && $4 != "-" && (best == "" || $4 + 0 < min) {
		min = $4 + 0; best = $1; loss = $4
	}
	END { if (best != "") print "best lr=" best " loss=" loss }')
[ -n "$best" ] || { echo "sweep.sh: no job finished" >&2; exit 1; }
echo "$best"
