#!/bin/sh
# comm.sh [MPIBUILD] - bench_comm (make MPI=1) on 2 ranks sharing a device,
# per device: the staged gradient reduction against MPI_Allreduce in host
# memory, and training steps of the MLP and the byte GPT (step time, the
# step's communication, the part hidden behind compute, what is left
# exposed; 1 rank as the baseline, MPI_Allreduce of the gradient's bytes
# in host memory as the limit)
#   BENCH_DEVICES     device ids, space separated (default: cpu:0
#                     vulkan:0 opencl:0); on the GPU machine e.g. vulkan:0
#   BENCH_COMM_WHAT   reduce, train or all (default all)
#   BENCH_COMM_SIZE   gradient bytes of the reduction rows (default 64M)
#   BENCH_COMM_REPS   runs per figure, median (default 5)
#   BENCH_COMM_MLP    the MLP@BATCH (default 784x256x10@64; on a GPU
#                     784x1024x1024x10@4096)
#   BENCH_COMM_GPT    LAYERSxHEADSxDIMxCTX@BATCH (default 2x2x64x64@8; on
#                     a GPU 6x6x384x256@64)
#   BENCH_COMM_SHARDS the global batch's shards (default 4: 2 a rank)
#   BENCH_COMM_STEPS  steps a timed round (default 5)
#   BENCH_COMM_BUCKET bucket bytes of the training rows (default 1M)
set -e
build=${1:-build-mpi}
run="mpirun --oversubscribe"
[ "$(id -u)" = 0 ] && run="$run --allow-run-as-root"
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_hwloc_base_binding_policy=none
what=${BENCH_COMM_WHAT:-all}
echo "# gpuopt bench_comm, $(date -u +%Y-%m-%d), $(uname -n), $(nproc) cores"
for d in ${BENCH_DEVICES:-cpu:0 vulkan:0 opencl:0}; do
	if [ "$what" != train ]; then
		for b in 1M 4M 16M; do
			$run -np 2 "$build/bin/bench_comm" -d "$d" \
				-s "${BENCH_COMM_SIZE:-64M}" -b $b \
				-r "${BENCH_COMM_REPS:-5}"
		done
	fi
	if [ "$what" != reduce ]; then
		$run -np 2 "$build/bin/bench_comm" -d "$d" \
			-m "${BENCH_COMM_MLP:-784x256x10@64}" \
			-g "${BENCH_COMM_GPT:-2x2x64x64@8}" \
			-S "${BENCH_COMM_SHARDS:-4}" -n "${BENCH_COMM_STEPS:-5}" \
			-b "${BENCH_COMM_BUCKET:-1M}" -r "${BENCH_COMM_REPS:-5}"
	fi
done
