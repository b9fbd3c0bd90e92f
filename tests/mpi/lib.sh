# lib.sh - sourced by tests/mpi/*.sh. run.sh exports TOP, TRAIN (the MPI
# build's gpuopt-train), PLAIN_TRAIN (the plain build's) and BENCH_COMM.
#   mpi N ARG...     TRAIN under mpirun -np N: $rc, $out, $err
#   plain ARG...     PLAIN_TRAIN alone: $rc, $out, $err
#   gen_data         $T/data.safetensors, a small learnable set
#   devices          the device ids to test ($GPUOPT_MPI_DEVICES or those
#                    of cpu:0 opencl:0 vulkan:0 that exist)
set -u
T=$(mktemp -d /tmp/gpuopt-mpi-test.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 1' INT TERM HUP
# a shared machine: no busy polling, no binding to cores
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_hwloc_base_binding_policy=none \
	OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader,tcp

fail()
{
	echo "FAIL: $*"
	exit 1
}

skip()
{
	echo "SKIP: $*"
	exit 77
}

command -v mpirun >/dev/null || skip "no mpirun (openmpi-bin)"
MPIRUN="mpirun --oversubscribe"
[ "$(id -u)" = 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"

mpi()
{
	n=$1
	shift
	$MPIRUN -np "$n" "$TRAIN" "$@" >"$T/out" 2>"$T/err" </dev/null
	rc=$?
	out=$(cat "$T/out")
	err=$(cat "$T/err")
}

plain()
{
	"$PLAIN_TRAIN" "$@" >"$T/out" 2>"$T/err" </dev/null
	rc=$?
	out=$(cat "$T/out")
	err=$(cat "$T/err")
}

ok()
{
	[ "$rc" -eq 0 ] || fail "$1: exit $rc: $err"
}

refused()
{
	[ "$rc" -ne 0 ] || fail "$1: exit 0, want a refusal"
	case $err in
	*"$2"*) ;;
	*) fail "$1: stderr '$err' lacks '$2'" ;;
	esac
}

# fresh random data each run (the seed is printed for a rerun)
DATA_SEED=${GPUOPT_MPI_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
gen_data()
{
	echo "data seed $DATA_SEED"
	/usr/bin/python3 "$TOP/tests/mpi/gen_data.py" "$T/data.safetensors" \
		660 37 7 "$DATA_SEED" || fail "gen_data.py"
}

devices()
{
	if [ -n "${GPUOPT_MPI_DEVICES-}" ]; then
		echo "$GPUOPT_MPI_DEVICES"
		return
	fi
	for d in cpu:0 opencl:0 vulkan:0; do
		"$TRAIN" -q model=mlp:37x7 data="$T/data.safetensors" \
			device=$d max_steps=1 batch_size=6 >/dev/null 2>&1 &&
			echo $d
	done
}

# learned WHAT: the progress lines in $out (log_every=1, 20 steps) show
# the mean loss of steps 16..20 below that of steps 1..5
learned()
{
	echo "$out" | awk '$1 == "step" && $2 <= 5 { a += $4; na++ }
		$1 == "step" && $2 >= 16 && $2 <= 20 { b += $4; nb++ }
		END { if (na != 5 || nb != 5) exit 2
		      printf "loss %.4f -> %.4f\n", a / na, b / nb
		      exit !(b / nb < a / na) }' ||
		fail "$1: nothing learned: $out"
}
