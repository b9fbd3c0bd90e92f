# lib.sh - sourced by every tests/fs/*.sh: a fresh gpuoptfs on a temporary
# mountpoint with its own state directory, always unmounted at exit.
#
#   $M  the mountpoint    $S  the state directory    $T  scratch space
#   fs_start [OPTION...]  mount and wait until the daemon serves
#   fs_finish             SIGTERM; fail unless it exits 0, cleanly
#   w FILE TEXT [OFF]     one write; prints OK or the errno's name
#   expect WHAT GOT WANT  fail unless GOT = WANT
#   new_job NAME CONFIG   mkdir jobs/NAME and write CONFIG to its config
#   wait_for SECONDS CMD  run CMD until it succeeds
# run-fs.sh exports GPUOPTFS, FSIO and EXTSTEP.
set -u

T=$(mktemp -d /tmp/gpuoptfs-test.XXXXXX) || exit 1
chmod 755 "$T"
M=$T/mnt
S=$T/state
mkdir "$M"
export GPUOPT_DEVICE="${GPUOPT_DEVICE-cpu}"
FS_PID=

fail()
{
	echo "FAIL: $*"
	if [ -s "$T/daemon.log" ]; then
		echo "--- daemon log (tail):"
		tail -n 20 "$T/daemon.log"
	fi
	exit 1
}

skip()
{
	echo "SKIP: $*"
	exit 77
}

need_root()
{
	[ "$(id -u)" = 0 ] || skip "needs root"
}

fs_start()
{
	"$GPUOPTFS" -f -d --state-dir "$S" "$@" "$M" 2>>"$T/daemon.log" &
	FS_PID=$!
	i=0
	while ! mountpoint -q "$M"; do
		kill -0 "$FS_PID" 2>/dev/null || {
			FS_PID=
			fail "gpuoptfs exited at start"
		}
		i=$((i + 1))
		[ $i -lt 500 ] || fail "gpuoptfs did not mount in 10 s"
		sleep 0.02
	done
	cat "$M/version" >/dev/null || fail "cannot read version"
}

# fs_kill SIGNAL: signal the daemon and wait for it; its exit status
fs_kill()
{
	kill "-$1" "$FS_PID" 2>/dev/null
	wait "$FS_PID"
	rc=$?
	FS_PID=
	return $rc
}

fs_finish()
{
	fs_kill TERM
	rc=$?
	[ $rc -eq 0 ] || fail "gpuoptfs exited $rc on SIGTERM"
	! mountpoint -q "$M" || fail "still mounted after SIGTERM"
	! grep -q -e 'Sanitizer' -e 'runtime error' "$T/daemon.log" ||
		fail "sanitizer report in the daemon log"
}

cleanup()
{
	if [ -n "$FS_PID" ]; then
		kill -TERM "$FS_PID" 2>/dev/null
		i=0
		while kill -0 "$FS_PID" 2>/dev/null && [ $i -lt 100 ]; do
			sleep 0.05
			i=$((i + 1))
		done
		kill -KILL "$FS_PID" 2>/dev/null
		wait "$FS_PID" 2>/dev/null
	fi
	if mountpoint -q "$M" 2>/dev/null ||
	   [ "$("$FSIO" stat "$M")" = ENOTCONN ]; then
		umount -l "$M" 2>/dev/null || fusermount3 -u -z "$M"
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

w()
{
	"$FSIO" write "$@"
}

expect()
{
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}

new_job()
{
	expect "mkdir jobs/$1" "$("$FSIO" mkdir "$M/jobs/$1")" OK
	expect "config of $1" "$(w "$M/jobs/$1/config" "$2")" OK
}

# stat_of JOB KEY: one value of jobs/JOB/stat
stat_of()
{
	awk -v k="$2" '$1 == k { print $2 }' "$M/jobs/$1/stat"
}

# run_to_done JOB...: start each job, wait (300 s) until it stops, and
# expect it done
run_to_done()
{
	for j in "$@"; do
		expect "$j start" "$(w "$M/jobs/$j/ctl" start)" OK
		wait_for 300 job_stopped "$j" || fail "$j: still running"
		expect "$j state" "$(cat "$M/jobs/$j/state")" done
	done
}

job_stopped()
{
	[ "$(cat "$M/jobs/$1/state")" != running ]
}

wait_for()
{
	end=$(($(date +%s) + $1))
	shift
	until "$@"; do
		[ "$(date +%s)" -le $end ] || return 1
		sleep 0.05
	done
}
