#!/bin/sh
# A rank that dies (SIGKILL) or hangs (SIGSTOP) mid-training ends the
# whole job: mpirun exits non-zero within the time limit, the hang with
# gpuopt's message naming the timeout, and no rank is left behind.
. "$(dirname "$0")/lib.sh"
gen_data
common="model=mlp:37x24x7 data=$T/data.safetensors batch_size=48
	max_steps=100000000 log_every=1 device=cpu:0 shards=2"

# alive PID: a process that is not a zombie
alive()
{
	st=$(sed -n 's/^[0-9]* (.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ]
}

# run_and N SIGNAL TIMEOUT: start -np 2, wait for training, send SIGNAL to
# rank 1, wait at most 60 s for mpirun to end; $rc, $err, $secs
run_and()
{
	rm -f "$T/out" "$T/err"
	$MPIRUN -np 2 "$TRAIN" $common timeout=$2 >"$T/out" 2>"$T/err" \
		</dev/null &
	mp=$!
	i=0
	until grep -q '^step ' "$T/out" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 300 ] || { kill $mp; fail "no progress: $(cat "$T/err")"; }
		sleep 0.1
	done
	r1=
	i=0
	while [ -z "$r1" ] && [ $i -lt 50 ]; do
		for p in $(pgrep -P $mp); do
			tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
				grep -qx 'OMPI_COMM_WORLD_RANK=1' && r1=$p
		done
		i=$((i + 1))
		[ -n "$r1" ] || sleep 0.1
	done
	[ -n "$r1" ] || { kill $mp; fail "no rank 1 under mpirun $mp"; }
	t0=$(date +%s)
	kill -s "$1" "$r1"
	i=0
	while kill -0 $mp 2>/dev/null; do
		i=$((i + 1))
		if [ $i -ge 600 ]; then
			kill -9 $mp "$r1"
			fail "SIG$1: the job still runs after 60 s"
		fi
		sleep 0.1
	done
	wait $mp
	rc=$?
	secs=$(($(date +%s) - t0))
	err=$(cat "$T/err")
	sleep 1
	! alive "$r1" || { kill -9 "$r1"; fail "rank 1 left behind"; }
	echo "SIG$1: mpirun exit $rc after ${secs}s"
}

run_and KILL 300
[ "$rc" -ne 0 ] || fail "rank 1 killed: mpirun exit 0"
case $err in
*"signal 9"*|*"Killed"*|*"exited on signal"*|*"rank 1"*) ;;
*) fail "rank 1 killed: no message naming it: $err" ;;
esac

run_and STOP 3

[ "$rc" -ne 0 ] || fail "rank 1 stopped: mpirun exit 0"
[ "$secs" -le 30 ] || fail "rank 1 stopped: the job ended only after ${secs}s"
case $err in
*"no answer from the other ranks in 3 s"*) ;;
*) fail "rank 1 stopped: no timeout message: $err" ;;
esac
