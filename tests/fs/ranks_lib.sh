# ranks_lib.sh - sourced after lib.sh by the tests of jobs with ranks=:
# skips without the MPI worker or mpiexec; a shared machine's settings
# for Open MPI, passed on by the daemon to its ranks
mpi_worker=$(dirname "$GPUOPTFS")/gpuoptfs-worker-mpi
[ -x "$mpi_worker" ] || skip "no $mpi_worker (Open MPI's libopenmpi-dev at build time)"
command -v mpiexec >/dev/null || skip "no mpiexec (openmpi-bin)"
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl=self,vader,tcp
