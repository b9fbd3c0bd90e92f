#!/bin/sh
# A rank of a ranks=2 job that hangs (SIGSTOP) fails that job within the
# communication timeout (half the watchdog's), with the cause in
# error; every rank process is gone afterwards, stopped one included, and
# the daemon goes on serving.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ranks.inc"
data=/usr/share/datasets/fashion-mnist
[ -r "$data/train-images-idx3-ubyte.gz" ] ||
	skip "no $data (apt-get install dataset-fashion-mnist)"
rank_pid()
{
	for p in $(pgrep -f "^[^ ]*gpuoptfs-worker-mpi $1 "); do
		if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
			grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
			echo "$p"
			return 0
		fi
	done
	return 1
}
failed()
{
	[ "$(cat "$M/jobs/$1/state")" = failed ]
}
gone()
{
	! kill -0 "$1" 2>/dev/null
}

GPUOPTFS_WORKER_TIMEOUT=8 fs_start
new_job victim "model=mlp:784x64x10 data=$data batch_size=64 max_steps=max ranks=2"
new_job other "model=quadratic:16 max_steps=max"
expect "start victim" "$(w "$M/jobs/victim/ctl" start)" OK
wait_for 30 sh -c "[ \"\$(awk '\$1 == \"step\" { print \$2 }' '$M/jobs/victim/stat')\" -gt 20 ]" ||
	fail "victim does not step: $(cat "$M/jobs/victim/error")"
p0=$(rank_pid victim 0) || fail "no rank 0 process"
p1=$(rank_pid victim 1) || fail "no rank 1 process"
t0=$(date +%s)
kill -STOP "$p1"
wait_for 20 failed victim || fail "victim not failed: $(cat "$M/jobs/victim/state")"
t=$(($(date +%s) - t0))
[ $t -le 12 ] || fail "the failure took $t s"
err=$(cat "$M/jobs/victim/error")
case $err in
*"no answer from the other ranks"*) ;;
*) fail "error lacks the cause: $err" ;;
esac
wait_for 15 gone "$p1" || { kill -KILL "$p1"; fail "the stopped rank lives on"; }
wait_for 5 gone "$p0" || fail "rank 0 lives on"
expect "victim worker_pid" "$(stat_of victim worker_pid)" 0
expect "step other" "$(w "$M/jobs/other/ctl" "step 3")" OK
expect "other stepped" "$(stat_of other step)" 3
echo "failed in $t s: $err"
fs_finish
echo PASS
