#!/bin/sh
# run.sh MPIBUILD PLAINBUILD - tests/mpi/*.sh: gpuopt-train of MPIBUILD
# (make MPI=1) under real mpirun processes, and PLAINBUILD's (no MPI)
# refusals. A test exiting 77 is skipped (it says why).
# GPUOPT_MPI_DEVICES: the device ids to train on (default "cpu:0 opencl:0
# vulkan:0", those that exist); each rank takes the same id.
mb=${1:-build-mpi}
pb=${2:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
case $mb in /*) ;; *) mb=$top/$mb ;; esac
case $pb in /*) ;; *) pb=$top/$pb ;; esac
out=$mb/tests/mpi
mkdir -p "$out" || exit 1
export TOP="$top" MPI_BUILD="$mb" PLAIN_BUILD="$pb" TRAIN="$mb/bin/gpuopt-train" PLAIN_TRAIN="$pb/bin/gpuopt-train" \
	BENCH_COMM="$mb/bin/bench_comm"
[ -x "$TRAIN" ] || { echo "tests/mpi/run.sh: no $TRAIN" >&2; exit 1; }

. "$top/tests/tally.sh"
for t in "$top"/tests/mpi/*.sh; do
	name=$(basename "$t" .sh)
	case $name in lib|run) continue ;; esac
	log=$out/$name.log
	t0=$(date +%s)
	timeout -k 5 300 sh "$t" >"$log" 2>&1
	rc=$?
	tally "mpi/$name" $rc "$log" " ($(($(date +%s) - t0))s)"
done
tally_end "mpi tests"
