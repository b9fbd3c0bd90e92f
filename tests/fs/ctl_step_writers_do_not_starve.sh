#!/bin/sh
# 16 jobs each given `step 100000000000` in the background cannot take
# the daemon's threads: beyond a few waiting writes per uid the rest get
# EAGAIN, root's `cat stat` still answers within 100 ms, the writers die
# at once when killed (no D state), and a ctl write to a job removed
# after the file was opened fails with ENOENT at once.
. "$(dirname "$0")/lib.sh"
need_root
command -v setpriv >/dev/null || skip "no setpriv"
fs_start
as_nobody()
{
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
pids=
for i in $(seq 1 16); do
	if [ $i -le 8 ]; then
		new_job "r$i" "model=quadratic:8 max_steps=max"
		( w "$M/jobs/r$i/ctl" "step 100000000000" >"$T/out.r$i" ) &
	else
		expect "mkdir n$i" "$(as_nobody "$FSIO" mkdir "$M/jobs/n$i")" OK
		expect "config n$i" "$(as_nobody "$FSIO" write "$M/jobs/n$i/config" \
			"model=quadratic:8 max_steps=max")" OK
		( as_nobody "$FSIO" write "$M/jobs/n$i/ctl" "step 100000000000" \
			>"$T/out.n$i" ) &
	fi
	pids="$pids $!"
done
sleep 2
best=999999
for i in 1 2 3 4 5; do
	t0=$(date +%s%N)
	cat "$M/stat" "$M/jobs/r1/stat" "$M/jobs/n9/stat" >/dev/null ||
		fail "cannot read stat"
	t=$((($(date +%s%N) - t0) / 1000000))
	[ $t -lt $best ] && best=$t
done
[ $best -lt 100 ] || fail "stat took $best ms with 16 step writers"
eagain=$(cat "$T"/out.* | grep -c EAGAIN)
[ "$eagain" -ge 8 ] || fail "only $eagain writers got EAGAIN"
# each uid has at most 4 waiting; kill them all
waiting=0
for p in $pids; do
	kill -0 "$p" 2>/dev/null && waiting=$((waiting + 1))
done
[ $waiting -le 8 ] || fail "$waiting writers wait"
[ $waiting -ge 2 ] || fail "only $waiting writers wait"
pkill_list=$(for p in $pids; do pgrep -P "$p"; done)
for p in $pkill_list; do
	kill -KILL "$p" 2>/dev/null
done
t0=$(date +%s%N)
for p in $pids; do
	wait "$p"
done
t=$((($(date +%s%N) - t0) / 1000000))
[ $t -lt 2000 ] || fail "killed writers took $t ms to exit"
for p in $pkill_list; do
	[ ! -e /proc/$p ] || fail "writer $p lingers: $(cat /proc/$p/status | grep State)"
done
# an interrupted writer gets EINTR, the daemon answers, others step
cat "$M/stat" >/dev/null || fail "daemon gone"
expect "a new waiter" "$(timeout 1 "$FSIO" write "$M/jobs/r1/ctl" "step 3" ||
	echo timeout)" EBUSY

# a write to a job removed after its ctl was opened: ENOENT, at once
new_job gone "model=quadratic:8 max_steps=10"
out=$(/usr/bin/python3 - "$M/jobs/gone" <<'PY'
import errno, os, sys
fd = os.open(sys.argv[1] + "/ctl", os.O_WRONLY)
os.rmdir(sys.argv[1])
try:
    os.pwrite(fd, b"start", 0)
    print("OK")
except OSError as e:
    print(errno.errorcode[e.errno])
PY
)
expect "write to a removed job" "$out" ENOENT
fs_finish
echo PASS
