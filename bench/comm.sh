#!/bin/sh
# comm.sh [MPIBUILD] - bench_comm (make MPI=1) on 2 ranks: the staged
# gradient reduction against MPI_Allreduce in host memory, per device
#   BENCH_DEVICES     device ids, space separated (default: cpu:0
#                     vulkan:0 opencl:0); on the GPU machine e.g. vulkan:0
#   BENCH_COMM_SIZE   gradient bytes (default 64M)
#   BENCH_COMM_REPS   runs per figure, median (default 5)
set -e
build=${1:-build-mpi}
run="mpirun --oversubscribe"
[ "$(id -u)" = 0 ] && run="$run --allow-run-as-root"
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_hwloc_base_binding_policy=none
echo "# gpuopt bench_comm, $(date -u +%Y-%m-%d), $(uname -n), $(nproc) cores"
for d in ${BENCH_DEVICES:-cpu:0 vulkan:0 opencl:0}; do
	for b in 1M 4M 16M; do
		$run -np 2 "$build/bin/bench_comm" -d "$d" \
			-s "${BENCH_COMM_SIZE:-64M}" -b $b -r "${BENCH_COMM_REPS:-5}"
	done
done
