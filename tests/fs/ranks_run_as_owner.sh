#!/bin/sh
# A ranks=2 job of nobody's: mpiexec and both ranks run as nobody, with
# no_new_privs and no capabilities, and mpiexec without
# --allow-run-as-root; the job trains and its stat reads. While the job
# waits for commands its ranks sleep: they do not spin a CPU.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ranks.inc"
need_root
command -v setpriv >/dev/null || skip "no setpriv"
need_data
as_nobody()
{
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
uid=$(id -u nobody)

fs_start
expect "mkdir" "$(as_nobody "$FSIO" mkdir "$M/jobs/theirs")" OK
expect "config" "$(as_nobody "$FSIO" write "$M/jobs/theirs/config" \
	"model=mlp:784x16x10 data=$data batch_size=32 max_steps=max ranks=2")" OK
expect "step" "$(as_nobody "$FSIO" write "$M/jobs/theirs/ctl" "step 3")" OK
expect "stepped" "$(stat_of theirs step)" 3
expect "ranks" "$(stat_of theirs ranks)" 2
mpx=$(stat_of theirs worker_pid)
[ "${mpx:-0}" -gt 0 ] || fail "no worker"
tr '\0' ' ' <"/proc/$mpx/cmdline" | grep -q -- --allow-run-as-root &&
	fail "nobody's mpiexec runs with --allow-run-as-root"
n=0
for p in $mpx $(pgrep -f "^[^ ]*gpuoptfs-worker-mpi theirs "); do
	st=/proc/$p/status
	expect "Uid of $p" "$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "$st")" \
		"$uid $uid $uid $uid"
	expect "NoNewPrivs of $p" "$(awk '/^NoNewPrivs:/ { print $2 }' "$st")" 1
	expect "CapEff of $p" "$(awk '/^CapEff:/ { print $2 }' "$st")" \
		0000000000000000
	n=$((n + 1))
done
expect "processes" "$n" 3
# CPU time (user + system ticks) of the ranks over 2 s of waiting
ticks()
{
	t=0
	for p in $(pgrep -f "^[^ ]*gpuoptfs-worker-mpi theirs "); do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
	done
	echo $t
}
c0=$(ticks)
sleep 2
c1=$(ticks)
hz=$(getconf CLK_TCK)
[ $((c1 - c0)) -lt $((hz / 5)) ] ||
	fail "idle ranks took $((c1 - c0)) ticks of CPU in 2 s (CLK_TCK $hz)"
fs_finish
echo PASS
