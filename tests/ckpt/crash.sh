#!/bin/sh
# crash.sh BUILD - SIGKILL a process that saves checkpoints over and over,
# at random moments, CKPT_KILLS times (default 50). After each kill the
# path must hold one whole checkpoint that restores (every param equal to
# its step, every state -step: a torn or mixed file cannot pass).
build=$1
helper=$build/tests/ckpt_helper
kills=${CKPT_KILLS:-50}
numel=${CKPT_CRASH_NUMEL:-1000000}
dir=$(mktemp -d /tmp/gpuopt-crash.XXXXXX)
trap 'rm -rf "$dir"' EXIT
path=$dir/ck.st
"$helper" loop "$path" -n "$numel" -R "$dir/ready" &
pid=$!
while [ ! -e "$dir/ready" ]; do sleep 0.01; done
kill -9 $pid
wait $pid 2>/dev/null
"$helper" check "$path" -n "$numel" || { echo "first checkpoint bad"; exit 1; }

leftovers=0
i=0
while [ $i -lt "$kills" ]; do
	rm -f "$dir/ready"
	"$helper" loop "$path" -n "$numel" -R "$dir/ready" &
	pid=$!
	while [ ! -e "$dir/ready" ] && kill -0 $pid 2>/dev/null; do
		sleep 0.01
	done
	# 0..149 ms into the save loop: any phase of a save
	ms=$(od -An -N2 -tu2 /dev/urandom | awk '{ print $1 % 150 }')
	sleep "$(printf '0.%03d' "$ms")"
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	if ! "$helper" check "$path" -n "$numel"; then
		echo "kill $i after ${ms} ms: the checkpoint does not restore"
		exit 1
	fi
	# a kill between link and rename may leave a whole temporary
	for f in "$dir"/.ck.st.tmp.*; do
		[ -e "$f" ] || continue
		leftovers=$((leftovers + 1))
		rm -f "$f"
	done
	i=$((i + 1))
done
echo "crash: $kills kills, every checkpoint whole ($leftovers temporaries left behind)"
