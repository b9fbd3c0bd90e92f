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
# ranking. Everything goes through gpuoptctl (GPUOPTCTL, default from
# PATH) and so through the tree at GPUOPT_MNT (default /gpuopt).
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

jobs=""
cleanup()
{
	[ "$keep" = 1 ] && return
	for j in $jobs; do
		"$ctl" stop "$j" 2>/dev/null || true
		"$ctl" rm "$j" || true
	done
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# one job per lr; the config is checked as a whole when the job is made
i=0
for lr in "$@"; do
	"$ctl" create "$prefix-$i" "optimizer=$optimizer" "lr=$lr" \
		"model=$model" "max_steps=$steps"
	jobs="$jobs $prefix-$i"
	i=$((i + 1))
done
# start them all: they run side by side, on their own threads
for j in $jobs; do
	"$ctl" start "$j"
done
# wait for each; a failed one (it diverged) is reported, not fatal
for j in $jobs; do
	"$ctl" wait -q "$j" || true
done

# the results, as `gpuoptctl status` shows them
results=$(i=0
for lr in "$@"; do
	"$ctl" status "$prefix-$i" | awk -v lr="$lr" '
		$1 == "state" { state = $2 }
		$1 == "step" { step = $2 }
		$1 == "loss" { loss = $2 }
		END { printf "%-12s %-8s %8s %s\n", lr, state, step, loss }'
	i=$((i + 1))
done)
printf '%-12s %-8s %8s %s\n%s\n' lr state step loss "$results"
best=$(printf '%s\n' "$results" | awk '
	$2 == "done" && $4 != "nan" && (best == "" || $4 + 0 < min) {
		min = $4 + 0; best = $1; loss = $4
	}
	END { if (best != "") print "best lr=" best " loss=" loss }')
[ -n "$best" ] || { echo "sweep.sh: no job finished" >&2; exit 1; }
echo "$best"
