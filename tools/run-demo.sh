#!/bin/sh
# run-demo.sh BUILD - the main job (make run): start gpuoptfs, then train
# an MLP on Fashion-MNIST with nothing but the shell - mkdir, echo, cat -
# on the best device, printing every command before it runs so that the
# reader learns the interface by watching the loss fall and the test
# accuracy rise.
#
# The tree is mounted at /gpuopt when run as root and /gpuopt is free,
# else on a temporary directory ($GPUOPT_DEMO_MNT, if set, is used
# instead); it is always unmounted at the end, on every way out: the end,
# a failure, ^C, SIGTERM, SIGHUP, or SIGPIPE ("make run | head").
set -u
build=${1:-build}
gpuoptfs=$build/bin/gpuoptfs
[ -x "$gpuoptfs" ] || { echo "run-demo.sh: no $gpuoptfs (make first)" >&2; exit 1; }

tmp=$(mktemp -d /tmp/gpuopt-demo.XXXXXX) || exit 1
made_gpuopt=
pid=
if [ -n "${GPUOPT_DEMO_MNT-}" ]; then
	mnt=$GPUOPT_DEMO_MNT
elif [ "$(id -u)" = 0 ] && ! mountpoint -q /gpuopt 2>/dev/null &&
   { [ ! -e /gpuopt ] || [ -z "$(ls -A /gpuopt 2>/dev/null)" ]; }; then
	[ -e /gpuopt ] || { mkdir /gpuopt && made_gpuopt=1; }
	mnt=/gpuopt
else
	mnt=$tmp/mnt
	mkdir "$mnt"
fi

cleanup()
{
	# stdout may be a closed pipe now: nothing more goes there
	trap '' PIPE INT TERM HUP
	exec >/dev/null
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	if mountpoint -q "$mnt" 2>/dev/null; then
		fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt"
	fi
	[ -n "$made_gpuopt" ] && rmdir /gpuopt
	rm -rf "$tmp"
}
trap cleanup EXIT
# a reader that goes away (make run | head) ends the demo cleanly too
trap 'exit 1' INT TERM HUP PIPE

# run CMD: print it as the shell would run it, then run it
run()
{
	printf '+ %s\n' "$1"
	eval "$1" || { echo "run-demo.sh: failed: $1" >&2; exit 1; }
}

note()
{
	printf '\n# %s\n' "$*"
}

J=$mnt/jobs/demo

note "start the daemon (-f: in the foreground, here in the background)"
printf '+ %s -f --state-dir %s %s &\n' "$gpuoptfs" "$tmp/state" "$mnt"
"$gpuoptfs" -f --state-dir "$tmp/state" "$mnt" &
pid=$!
i=0
until mountpoint -q "$mnt"; do
	kill -0 "$pid" 2>/dev/null || { echo "run-demo.sh: gpuoptfs failed" >&2; exit 1; }
	i=$((i + 1))
	[ $i -lt 500 ] || { echo "run-demo.sh: gpuoptfs did not mount" >&2; exit 1; }
	sleep 0.02
done
run "ls $mnt"
run "cat $mnt/version"
run "grep . $mnt/devices/*/id $mnt/devices/*/type"

data=${GPUOPT_DEMO_DATA:-/usr/share/datasets/fashion-mnist}
[ -e "$data" ] || { echo "run-demo.sh: no $data (apt-get install dataset-fashion-mnist)" >&2; exit 1; }

note "a job is a directory; its config takes key=value words, a line each"
run "mkdir $J"
run "printf 'model=mlp:784x256x10\\ndata=$data\\n' > $J/config"
run "echo 'optimizer=adam lr=0.002 batch_size=128 epochs=${GPUOPT_DEMO_EPOCHS:-8} eval_every=117 log_every=117 device=best' > $J/config"
run "cat $J/config"
run "ls $J/params"

note "train it on the best device: the loss falls, the test accuracy rises"
run "echo start > $J/ctl"
until [ "$(cat "$J/state")" != running ]; do
	sleep 2
	run "grep -E '^(state|step|epoch|loss|eval_loss|accuracy|samples_per_sec|device) ' $J/stat | tr '\\n' ' '; echo"
done
run "cat $J/state"
run "cat $J/error"
[ "$(cat "$J/state")" = done ] || { echo "run-demo.sh: the job did not finish" >&2; exit 1; }

note "look back: history.csv has a row every log_every steps"
run "cat $J/history.csv"
run "tail -n 3 $J/events"
run "rmdir $J"

note "SIGTERM stops the daemon's jobs and unmounts"
printf '+ kill -TERM %s\n' "$pid"
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
mountpoint -q "$mnt" && { echo "run-demo.sh: still mounted" >&2; exit 1; }
[ $rc -eq 0 ] || { echo "run-demo.sh: gpuoptfs exited $rc" >&2; exit 1; }
echo "gpuoptfs exited 0; $mnt is unmounted"
